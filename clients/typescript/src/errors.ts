// The client's errors: the console's JSON refusals by status, and what happens on the way.

/** The console's JSON error body. */
export interface ErrorBody {
  error: string;
  detail?: string;
  fields?: Record<string, string[]>;
}

export class ConsoleError extends Error {
  override name = "ConsoleError";
}

/** The console answered with a refusal (4xx/5xx): `status`, `error` (a code), `detail`, `fields`. */
export class ApiError extends ConsoleError {
  override name = "ApiError";
  readonly error: string;
  readonly detail: string;
  readonly fields: Record<string, string[]>;
  constructor(
    readonly status: number,
    body: ErrorBody,
  ) {
    super(`${status} ${body.error}: ${body.detail ?? ""}`);
    this.error = body.error;
    this.detail = body.detail ?? "";
    this.fields = body.fields ?? {};
  }
}
export class BadRequest extends ApiError {
  override name = "BadRequest";
}
export class Unauthorized extends ApiError {
  override name = "Unauthorized";
}
export class Forbidden extends ApiError {
  override name = "Forbidden";
}
export class NotFound extends ApiError {
  override name = "NotFound";
}
export class Conflict extends ApiError {
  override name = "Conflict";
}
export class ServerError extends ApiError {
  override name = "ServerError";
}

/** No answer: the console could not be reached (the request may not have arrived). */
export class ConsoleUnavailable extends ConsoleError {
  override name = "ConsoleUnavailable";
}
/** No answer in time (a write may have taken effect: retry with the same Idempotency-Key). */
export class ConsoleTimeout extends ConsoleError {
  override name = "ConsoleTimeout";
}
/** `wait` ran out of time; the instance still awaits the person (wait again later). */
export class WaitTimeout extends ConsoleError {
  override name = "WaitTimeout";
}
/** The instance is not ready: the person has not confirmed it (yet). */
export class NotReady extends ConsoleError {
  override name = "NotReady";
}
/** The person did not answer in time: nothing of the instance binds. */
export class InstanceExpired extends ConsoleError {
  override name = "InstanceExpired";
}

/** A receipt that does not vouch for what it is checked against. */
export class ReceiptError extends ConsoleError {
  override name = "ReceiptError";
}
export class ReceiptInvalid extends ReceiptError {
  override name = "ReceiptInvalid";
}
export class ReceiptExpired extends ReceiptError {
  override name = "ReceiptExpired";
}
export class ReceiptAudienceMismatch extends ReceiptError {
  override name = "ReceiptAudienceMismatch";
}
export class ReceiptDigestMismatch extends ReceiptError {
  override name = "ReceiptDigestMismatch";
}
/** Irreversible values only the runtime vouched for: no person confirmed them (`slots`). */
export class ReceiptNotApprovedByPerson extends ReceiptError {
  override name = "ReceiptNotApprovedByPerson";
  constructor(
    message: string,
    readonly slots: string[],
  ) {
    super(message);
  }
}
/** The console refused to redeem: used already (`receipt_redeemed`) or revoked. */
export class ReceiptRedeemed extends Conflict {
  override name = "ReceiptRedeemed";
}
export class ReceiptRevoked extends Conflict {
  override name = "ReceiptRevoked";
}

export class WebhookVerificationError extends ConsoleError {
  override name = "WebhookVerificationError";
}

/** The typed error of a refusal. */
export function errorFor(status: number, body: ErrorBody): ApiError {
  if (status === 409 && body.error === "receipt_redeemed") return new ReceiptRedeemed(status, body);
  if (status === 409 && body.error === "receipt_revoked") return new ReceiptRevoked(status, body);
  if (status === 400) return new BadRequest(status, body);
  if (status === 401) return new Unauthorized(status, body);
  if (status === 403) return new Forbidden(status, body);
  if (status === 404) return new NotFound(status, body);
  if (status === 409) return new Conflict(status, body);
  if (status >= 500) return new ServerError(status, body);
  return new ApiError(status, body);
}
