from __future__ import annotations

from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "console"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from console import checks  # noqa: F401 - registers the system checks
        from console.telemetry import configure_from_environment

        configure_from_environment()
