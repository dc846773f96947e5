"""Real Chromium (Debian's /usr/bin/chromium) driven by Playwright over a live server.

Every page a test opens is watched: a JavaScript dialog (alert/confirm/prompt) or a
Content-Security-Policy violation fails the test, so injected values can never execute unseen.
Screenshots go to artifacts/screenshots/ (git-ignored) for a person to look at.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# Playwright's sync API runs an event loop in this thread; the Django ORM calls that the test
# itself makes are still synchronous and safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
EXPECT_TIMEOUT_MS = 15_000
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"

CSP_LISTENER = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__cspViolations.push(e.violatedDirective + ' ' + e.blockedURI);
});
"""

# When each button, named by its text, was first enabled after being disabled (or, waiting
# out the reading delay, aria-disabled): ms since the navigation began, on the page's own clock
# (`enabled_after`).
ENABLED_AT = """
window.__enabledAt = {};
new MutationObserver(function (records) {
  records.forEach(function (record) {
    var button = record.target;
    var name = button.textContent.replace(/\\s+/g, " ").trim();
    var enabled = !button.disabled && button.getAttribute("aria-disabled") !== "true";
    if (record.oldValue !== null && enabled && !(name in window.__enabledAt)) {
      window.__enabledAt[name] = performance.now();
    }
  });
}).observe(document, {
  subtree: true,
  attributes: true,
  attributeFilter: ["disabled", "aria-disabled"],
  attributeOldValue: true
});
"""


def enabled_after(page: Any, name: str) -> float:  # noqa: ANN401 - Playwright's Page
    """How many ms after the page's first byte arrived the button `name` (its whole text, as
    "Confirm Amount") went from disabled to enabled, once it is enabled. The page's clock, so
    the test's own pace (a slow machine) does not move it; and since the page cannot run before
    its first byte, at least a delay armed as it loads."""
    return float(
        page.evaluate(
            "name => window.__enabledAt[name] - "
            "performance.getEntriesByType('navigation')[0].responseStart",
            name,
        )
    )


@pytest.fixture
def fast_confirm(settings: Any) -> int:  # noqa: ANN401 - pytest-django's settings
    """A short anti-fatigue delay (ms) on irreversible cards' buttons, which tests wait out."""
    settings.CONSOLE_CONFIRM_DELAY_MS = 300
    return 300


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.browser)
            if not CHROMIUM.exists():
                item.add_marker(
                    pytest.mark.skip(reason="needs Debian's chromium at /usr/bin/chromium")
                )


# One browser per test module, not per session: Playwright's sync API keeps an event loop
# running while it is started, and the client's end-to-end tests (asyncio.run) must not find
# one when they run after a browser module in the same process.
@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import expect, sync_playwright

    # CI runs two test processes, each with a browser and a live server, on two cores: give a
    # swap longer than Playwright's 5 s default before calling it missing.
    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


class PageWatch:
    def __init__(self) -> None:
        self.dialogs: list[str] = []
        self.csp_console: list[str] = []
        self.page_errors: list[str] = []


@pytest.fixture
def page(browser, live_server, transactional_db) -> Iterator[object]:  # noqa: ANN001
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    context.add_init_script(CSP_LISTENER)
    context.add_init_script(ENABLED_AT)
    page = context.new_page()
    watch = PageWatch()

    def on_dialog(dialog) -> None:  # noqa: ANN001
        watch.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def on_console(message) -> None:  # noqa: ANN001
        if "Content Security Policy" in message.text:
            watch.csp_console.append(message.text)

    page.on("dialog", on_dialog)
    page.on("console", on_console)
    page.on("pageerror", lambda error: watch.page_errors.append(str(error)))
    page.watch = watch
    yield page
    violations = []
    try:
        violations = page.evaluate("window.__cspViolations || []")
    except Exception:  # noqa: BLE001 - the page may be closed or navigating; the console still counts
        violations = []
    context.close()
    assert watch.dialogs == [], f"a dialog opened: {watch.dialogs}"
    assert watch.csp_console == [] and violations == [], (
        f"CSP violations: {watch.csp_console} {violations}"
    )
    assert watch.page_errors == [], f"JavaScript errors: {watch.page_errors}"


@pytest.fixture
def sign_in(page) -> Callable[[str, str], None]:  # noqa: ANN001
    def do(username: str, password: str) -> None:
        page.goto("/accounts/login/")
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Sign in").click()
        # Signed in: the page left the sign-in form. (Not "networkidle": a live page always
        # has its long-poll open.)
        page.wait_for_url(lambda url: "/accounts/login/" not in url)
        page.wait_for_load_state("load")

    return do


@pytest.fixture
def sign_out(page) -> Callable[[], None]:  # noqa: ANN001
    from playwright.sync_api import expect

    def do() -> None:
        page.get_by_role("button", name="Sign out").click()
        # Signed out: the sign-in form has loaded. A navigation started before then (the
        # test's next `goto`) would cut the sign-out short, or be cut short by it.
        page.wait_for_url(lambda url: "/accounts/login/" in url)
        expect(page.get_by_label("Username")).to_be_visible()

    return do


# A screenshot is for a person to look at, so a full page is kept to its first 6,000 px.
# Chromium captures a full page as one surface of the page's whole height; at 390 px the
# activity log is about 12,000 px tall, close to the compositor's 16,384 px limit, and such a
# capture failed now and then on a busy machine ("Unable to capture screenshot").
SHOT_MAX_HEIGHT = 6000
_NEXT_FRAME = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"


def shoot(page, path: Path, *, full_page: bool = True) -> Path:  # noqa: ANN001
    """Save what the page shows now as a PNG at `path`: the whole page (at most
    SHOT_MAX_HEIGHT px of it), or only the viewport.

    It waits for the page to paint a frame first (a resized viewport is laid out again), and
    if Chromium still has no frame to give it waits for the next one and tries again: a
    missing frame says nothing of the page under test."""
    from playwright.sync_api import Error

    path.parent.mkdir(parents=True, exist_ok=True)
    for attempt in range(3):
        page.evaluate(_NEXT_FRAME)
        clip = None
        if full_page:
            width, height = page.evaluate(
                "() => [document.documentElement.scrollWidth,"
                " document.documentElement.scrollHeight]"
            )
            clip = {"x": 0, "y": 0, "width": width, "height": min(height, SHOT_MAX_HEIGHT)}
        try:
            # caret="initial": hiding the caret leaves style="" on inputs, which htmx's settle
            # then copies onto swapped-in elements, a CSP violation the screenshot caused.
            page.screenshot(path=str(path), full_page=full_page, clip=clip, caret="initial")
            return path
        except Error as error:
            if "Unable to capture screenshot" not in str(error) or attempt == 2:
                raise
    return path


@pytest.fixture
def screenshot(page) -> Callable[[str], Path]:  # noqa: ANN001
    def take(name: str) -> Path:
        return shoot(page, SCREENSHOTS / f"{name}.png")

    return take
