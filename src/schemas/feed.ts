import { z } from "zod";
import { MAX_FEED_LIMIT } from "../reads/feed";
import { eventSchema } from "./responses";
import { dateOrder, filterShape, limitParam, optional, targetPair, timestampParam } from "./list-query";

export const MAX_FEED_WAIT = 25;

/** GET /v1/events/feed: the list filters, a cursor or a start time, a page size and a long poll. */
export const feedQuerySchema = z
  .object({
    ...filterShape,
    after: optional(z.string("after must be given once").max(200, "after must be a nextCursor of an earlier answer")).meta({
      description: "nextCursor of the previous answer: the feed goes on right after it. Never null; at the head it points past the last event",
    }),
    since: timestampParam("since", "Start at the first event committed at or after this time (ISO 8601 with a zone); not with after. Neither: from the first event"),
    limit: limitParam(MAX_FEED_LIMIT, 100, "Events"),
    format: optional(z.enum(["json", "ocsf"], "format must be json or ocsf"))
      .transform((v) => v ?? "json")
      .meta({ description: "json: the event shape (default). ocsf: each event as an OCSF 1.3.0 event (API Activity, or the class its action's catalog schema names)" }),
    wait: optional(
      z
        .string("wait must be given once")
        .regex(/^\d+$/, `wait must be a whole number of seconds from 0 to ${MAX_FEED_WAIT}`)
        .transform(Number)
        .pipe(z.number().max(MAX_FEED_WAIT, `wait must be at most ${MAX_FEED_WAIT} seconds`)),
    )
      .transform((v) => v ?? 0)
      .meta({ description: `Long poll: at the head, hold the request up to this many seconds (0 to ${MAX_FEED_WAIT}) until an event is committed` }),
  })
  .refine(dateOrder.check, dateOrder.params)
  .refine(targetPair.check, targetPair.params)
  .refine((q) => q.after === undefined || q.since === undefined, { message: "give after or since, not both", path: ["since"] });

export const feedPageSchema = z
  .object({
    data: z.array(z.union([eventSchema, z.record(z.string(), z.unknown())])).meta({ description: "Matching events in chain (seq) order, oldest first: Event objects, or OCSF events with format=ocsf" }),
    gaps: z
      .array(
        z.object({
          first_seq: z.int(),
          last_seq: z.int(),
          kind: z.enum(["retention", "missing"]).meta({ description: "retention: purged under a signed retention record; missing: no record covers it (see GET /v1/events/verify)" }),
        }),
      )
      .meta({ description: "Seqs this answer passed that hold no event, never silent holes" }),
    nextCursor: z.string().meta({ description: "Pass as after for the next answer; also in the Link: <...>; rel=\"next\" header" }),
    at_head: z.boolean().meta({ description: "true: nothing more was committed when this answer was read; poll again later (or with wait). false: ask again at once" }),
  })
  .meta({ id: "FeedPage" });
