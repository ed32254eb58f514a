import { zValidator } from "@hono/zod-validator";
import type { ValidationTargets } from "hono";
import type { ZodType } from "zod";
import { ApiError } from "./errors";

export interface Issue {
  path: string;
  message: string;
}

export function toIssues(error: { issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }> }): Issue[] {
  return error.issues.map((i) => ({ path: i.path.map(String).join("."), message: i.message }));
}

export function validationError(issues: Issue[]): ApiError {
  const first = issues[0];
  const message = first ? (first.path ? `${first.path}: ${first.message}` : first.message) : "Invalid request";
  return new ApiError("VALIDATION_ERROR", message, { issues });
}

/** The one zValidator wrapper: every validation failure becomes the same 400 envelope. */
export function validate<T extends ZodType, Target extends keyof ValidationTargets>(target: Target, schema: T) {
  return zValidator(target, schema, (result) => {
    if (!result.success) throw validationError(toIssues(result.error));
  });
}
