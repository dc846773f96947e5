export * from "./canonical.js";
export * from "./client.js";
export * from "./errors.js";
export * from "./receipts.js";
export * from "./webhooks.js";
