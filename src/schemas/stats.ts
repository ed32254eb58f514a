import { z } from "zod";
import { timestampParam } from "./list-query";
import { bucketCount, MAX_BUCKETS, TOP_ACTIONS, type Bucket } from "../reads/rollups";

const DAY_MS = 86_400_000;
/** Without from: the week before `to`. Without bucket: hours up to this span, days beyond. */
export const DEFAULT_SPAN_DAYS = 7;
const HOURLY_UP_TO_DAYS = 14;

const bound = (name: string) => timestampParam(name, "ISO 8601 timestamp with a zone; compared with occurred_at, widened to whole buckets");

/** GET /v1/stats/activity. Defaults: to now, from a week before to, bucket hour up to 14 days and day beyond. */
export const activityParams = z.object({
  from: bound("from"),
  to: bound("to"),
  bucket: z
    .preprocess((v) => (v === "" ? undefined : v), z.enum(["hour", "day"], "bucket must be hour or day").optional())
    .meta({ description: "hour or day (UTC); default hour up to 14 days, day beyond" }),
});

/** What the handler validates with: the defaults filled in and the span checked. */
export const activityQuery = activityParams.transform((q, ctx) => {
    const to = q.to ?? new Date().toISOString();
    const from = q.from ?? new Date(Date.parse(to) - DEFAULT_SPAN_DAYS * DAY_MS).toISOString();
    if (from > to) {
      ctx.addIssue({ code: "custom", path: ["from"], message: "from must not be after to" });
      return z.NEVER;
    }
    const bucket: Bucket = q.bucket ?? (Date.parse(to) - Date.parse(from) <= HOURLY_UP_TO_DAYS * DAY_MS ? "hour" : "day");
    if (bucketCount(from, to, bucket) > MAX_BUCKETS) {
      ctx.addIssue({ code: "custom", path: ["from"], message: `from to to spans more than ${MAX_BUCKETS} ${bucket}s; narrow it${bucket === "hour" ? " or ask for bucket=day" : ""}` });
      return z.NEVER;
    }
    return { from, to, bucket };
  });

export const activitySchema = z
  .object({
    data: z.object({
      bucket: z.enum(["hour", "day"]),
      from: z.string().meta({ description: "Start of the first bucket" }),
      to: z.string().meta({ description: "End of the last bucket (inclusive, to the millisecond)" }),
      starts: z.array(z.string()).meta({ description: "Start of each bucket (UTC), oldest first" }),
      series: z
        .array(z.object({ action: z.string(), total: z.int(), counts: z.array(z.int()).meta({ description: "Per bucket, as starts" }) }))
        .meta({ description: `The range's ${TOP_ACTIONS} busiest actions, busiest first` }),
      other: z.array(z.int()).meta({ description: "Every other action, per bucket" }),
      total: z.int(),
    }),
  })
  .meta({ id: "ActivityResponse" });
