// Compile-time checks that the console's OpenAPI document says what a TypeScript client needs:
// `npm run typecheck` fails when a header or a field these name is undeclared or untyped.
import type { components, paths } from "./api.js";

type Schemas = components["schemas"];
// The keys a type declares by name (openapi-typescript adds an index signature to headers, so a
// plain `Pick` would accept an undeclared one).
type Declared<T> = keyof { [K in keyof T as string extends K ? never : K]: T[K] };
type Holds<T, K extends string> = K extends Declared<T> ? true : false;
type InstanceRead = paths["/api/v1/instances/{instance_id}/"]["get"];

// The long-poll's headers, on the request and on both answers.
export type LongPollRequest = NonNullable<InstanceRead["parameters"]["header"]>;
export const longPoll: LongPollRequest = { Prefer: "wait=25", "If-None-Match": '"tag"' };
export type ChangedHeaders = InstanceRead["responses"][200]["headers"];
export type UnchangedHeaders = InstanceRead["responses"][304]["headers"];
export const changed: [
  Holds<ChangedHeaders, "ETag">,
  Holds<ChangedHeaders, "Preference-Applied">,
  Holds<UnchangedHeaders, "ETag">,
  Holds<UnchangedHeaders, "Preference-Applied">,
] = [true, true, true, true];
type Opened = paths["/api/v1/instances/"]["post"]["responses"][200]["headers"];
export const replayed: Holds<Opened, "Idempotent-Replayed"> = true;
export const replayedValue: NonNullable<Opened["Idempotent-Replayed"]> = "true";
export const request: [Holds<LongPollRequest, "Prefer">, Holds<LongPollRequest, "If-None-Match">] =
  [true, true];

// Fields typed all the way down: an instance's quorum and who vouched for each bound value.
type Quorum = NonNullable<Schemas["InstanceOut"]["quorum"]>;
export const missing: Quorum["missing"] = 1;
export const requirement: Quorum["requirements"][number]["approvals_required"] = 2;
type Bound = NonNullable<Schemas["InstanceOut"]["bound"]>[string];
export const via: Bound["via"] = "console";
// @ts-expect-error: `via` is an enum, not any string
export const notAVia: Bound["via"] = "somebody";

// The lists a runtime pages through.
type Instances = paths["/api/v1/instances/"]["get"]["responses"][200]["content"]["application/json"];
export const firstStatus = (page: Instances): string | undefined => page.results[0]?.status;
type Classes = paths["/api/v1/task-classes/"]["get"]["responses"][200]["content"]["application/json"];
export const waiting = (page: Classes): string[] => page.results.flatMap((c) => c.unclassified);
