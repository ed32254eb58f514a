import { z } from "zod";

const ACTION_PATTERN = /^(\*|[^*]{1,255}|[^*]{1,254}\*)$/;

export const streamFilterSchema = z
  .object({
    actions: z
      .array(z.string("each action must be a string").regex(ACTION_PATTERN, "an action is exact, or a prefix ending in * (like user.*)"))
      .min(1, "actions, when given, lists at least one action")
      .max(100, "at most 100 actions")
      .optional(),
    organization: z.string("organization must be a string").min(1).max(255).optional(),
  })
  .strict()
  .meta({ id: "StreamFilter", description: "Which events the stream delivers; {} (or no filter) delivers every event." });

/**
 * A token goes out in a header of every delivery (Authorization: Splunk …, DD-API-KEY):
 * CR, LF, NUL or non-Latin-1 would make every fetch throw, and spaces at either end
 * would be trimmed off. Real HEC tokens and Datadog keys are plain visible ASCII.
 */
const HEADER_VALUE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/** POST /v1/streams. token: the Splunk HEC token or the Datadog API key; webhooks get a generated secret instead. */
export const createStreamSchema = z
  .object({
    type: z.enum(["webhook", "splunk", "datadog"], "type is webhook, splunk or datadog"),
    url: z.string("url must be a string").min(1).max(2048, "url is at most 2048 characters"),
    token: z
      .string("token must be a string")
      .min(1)
      .max(4096)
      .regex(HEADER_VALUE, "token is sent as an HTTP header value: visible ASCII characters only (no CR, LF, NUL or other control characters, no space at either end)")
      .optional(),
    filter: streamFilterSchema.optional(),
  })
  .strict()
  .superRefine((s, ctx) => {
    if (s.type !== "webhook" && !s.token) ctx.addIssue({ code: "custom", path: ["token"], message: `a ${s.type} stream needs its token` });
    if (s.type === "webhook" && s.token) ctx.addIssue({ code: "custom", path: ["token"], message: "webhooks are signed with a secret generated for them; send no token" });
  });

export const replayStreamSchema = z
  .object({ from_seq: z.number("from_seq must be a number").int("from_seq must be a whole number").min(1, "from_seq is at least 1") })
  .strict();
