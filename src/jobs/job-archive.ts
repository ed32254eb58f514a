/**
 * GET /v1/jobs/{id}/archive: all of an export job's files as one zip, streamed
 * (issue #39: an evidence export of a large project is dozens of files). Each
 * file is an entry at the zip's root under the name its own download route
 * gives it, so an unzipped archive is the folder a client would have
 * downloaded file by file; `npm run export:verify` reads either.
 *
 * Every byte goes through fflate's streaming Zip, one R2 body at a time and
 * only as fast as the client reads: the archive is never held, nor more than
 * one chunk of one file and the deflater's window.
 */
import { Zip, ZipDeflate } from "fflate";
import { ApiError } from "../lib/errors";
import { MANIFEST_NAME } from "./evidence";
import { fileKey, jobPrefix } from "./job-files";
import type { FilePart, Job } from "./job-store";

/**
 * Parts are plain CSV or JSON text (src/jobs/export-job.ts), which deflate
 * shrinks to about a third. Level 3 keeps nearly all of level 6's gain (31% of
 * the bytes against 30% on export-like JSON) at about 70 MB/s of CPU instead
 * of 55 (fflate in Node), so even the largest archive allowed below costs
 * about a minute of the Worker's CPU ([limits] cpu_ms).
 */
const LEVEL = 3;

/**
 * fflate writes no zip64: the central directory holds 32-bit offsets and
 * sizes and a 16-bit entry count, which would wrap silently past them. So an
 * archive is refused before its first byte unless even its worst case (every
 * part incompressible) fits in 4 GiB. Parts are a few MB each, far below a
 * single entry's 4 GiB; the whole is what can pass it, at about 20M events of
 * plain export. Those jobs' files are still each downloadable.
 */
const ZIP32_MAX = 0xffff_ffff;

/**
 * One R2 get per file, plus a list per 1,000 for the existence check, all in
 * the request's invocation (src/lib/meter.ts: 10,000 subrequests): this many
 * files leaves room for the rest of the request. Below zip32's 65,535 entries.
 */
export const MAX_ARCHIVE_FILES = 9_000;

/**
 * Bytes the zip can take at most for these files: each part's deflate output
 * (no more than its size plus a stored block's 5 bytes per 16 KiB, with margin),
 * its local header, data descriptor and central directory entry, and the end record.
 */
export function archiveBound(files: Array<Pick<FilePart, "name" | "bytes">>): number {
  const ENTRY = 30 + 16 + 46 + 64;
  return files.reduce((n, f) => n + f.bytes + Math.ceil(f.bytes / 16_384) * 5 + ENTRY + 2 * new TextEncoder().encode(f.name).length, 22);
}

/**
 * Why a job's archive cannot be sent, or null: the per-file route's
 * convention (404 for a job not in this project and for files expired,
 * canceled or erased), and 409 for a job whose files are not a whole export
 * yet (queued, running) or never will be (failed).
 */
export function archiveRefusal(job: Job | null): ApiError | null {
  if (!job) return new ApiError("NOT_FOUND", "No job with that id in this project");
  if (job.type !== "export") return new ApiError("NOT_FOUND", `A ${job.type} job has no files to archive`);
  if (job.status === "canceled" || job.filesExpired) {
    return new ApiError("NOT_FOUND", "The job's files are gone (canceled, expired or erased)", { status: job.status, files_expired: true });
  }
  if (job.status === "queued" || job.status === "running") {
    return new ApiError("CONFLICT", `The job is ${job.status}: its archive can be downloaded once it has succeeded (GET /v1/jobs/${job.id} says when)`, {
      reason: "job_not_finished",
      status: job.status,
    });
  }
  if (job.status === "failed") {
    return new ApiError(
      "CONFLICT",
      `The job failed (${job.error?.code ?? "unknown"}): its files are not a whole export, so they are not archived; each one written is still at its own url`,
      { reason: "job_failed", status: job.status },
    );
  }
  const bound = archiveBound(job.files);
  if (job.files.length > MAX_ARCHIVE_FILES || bound > ZIP32_MAX) {
    return new ApiError(
      "CONFLICT",
      `This job's ${job.files.length} files are too many or too large for one archive (at most ${MAX_ARCHIVE_FILES} files and 4 GiB); download them one by one from their urls`,
      { reason: "archive_too_large", files: job.files.length, bytes: job.files.reduce((n, f) => n + f.bytes, 0), max_files: MAX_ARCHIVE_FILES, max_bytes: ZIP32_MAX },
    );
  }
  return null;
}

/**
 * The entries' order: an evidence export's manifest.json first (a reader
 * streaming the zip learns what to expect before the parts), then the parts in
 * the job's order, which is the export's.
 */
export function archiveOrder(files: FilePart[]): FilePart[] {
  return [...files.filter((f) => f.name === MANIFEST_NAME), ...files.filter((f) => f.name !== MANIFEST_NAME)];
}

/**
 * The files R2 no longer holds, by listing the job's prefix (a list per 1,000
 * keys rather than a head per file): checked before the first byte, so a
 * missing part is an error in the envelope, never a truncated zip.
 */
export async function missingFiles(env: Pick<Env, "EXPORTS">, projectId: string, jobId: string, files: FilePart[]): Promise<string[]> {
  const present = new Set<string>();
  let cursor: string | undefined;
  do {
    const page = await env.EXPORTS.list({ prefix: jobPrefix(projectId, jobId), cursor, limit: 1000 });
    for (const o of page.objects) present.add(o.key);
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return files.filter((f) => !present.has(fileKey(projectId, jobId, f.name))).map((f) => f.name);
}

/**
 * The zip of `files` in order, each read from R2 only when the client has
 * taken everything before it. A file deleted after the check (a DELETE or an
 * erasure racing the download) errors the stream: the client sees a failed
 * transfer, and the zip has no central directory, so no reader takes it whole.
 */
export function archiveStream(env: Pick<Env, "EXPORTS">, projectId: string, jobId: string, files: FilePart[], mtime: Date): ReadableStream<Uint8Array> {
  let out: Uint8Array[] = [];
  let ended = false;
  let failure: Error | null = null;
  const zip = new Zip((error, chunk, final) => {
    if (error) failure = error;
    else out.push(chunk);
    if (final) ended = true;
  });
  let next = 0;
  let entry: ZipDeflate | null = null;
  let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;

  /** Feeds the zip until it has output (a chunk can vanish into the deflater's buffer) or has ended. */
  async function produce(): Promise<void> {
    while (out.length === 0 && !ended && !failure) {
      if (!reader) {
        if (next === files.length) {
          zip.end();
          continue;
        }
        const name = files[next++].name;
        const object = await env.EXPORTS.get(fileKey(projectId, jobId, name));
        if (!object) throw new Error(`${name} was deleted while the archive was being sent (the job was deleted, or an erasure removed its files)`);
        entry = new ZipDeflate(name, { level: LEVEL });
        entry.mtime = mtime;
        zip.add(entry);
        reader = (object.body as ReadableStream<Uint8Array>).getReader();
      }
      const { done, value } = await reader.read();
      if (done) {
        entry!.push(new Uint8Array(0), true);
        reader = null;
      } else if (value.length > 0) {
        entry!.push(value);
      }
    }
  }

  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          await produce();
          if (failure) throw failure;
        } catch (error) {
          zip.terminate();
          await reader?.cancel().catch(() => {});
          controller.error(error);
          return;
        }
        for (const chunk of out) controller.enqueue(chunk);
        out = [];
        if (ended) controller.close();
      },
      async cancel(reason) {
        zip.terminate();
        await reader?.cancel(reason).catch(() => {});
      },
    },
    // Pull only as the client reads: R2 is read no further ahead than the client.
    { highWaterMark: 0 },
  );
}
