import { ApiError } from "../lib/errors";
import { ArchiveDamagedError } from "../storage/archive-segments";

/**
 * Reads of an event or its check, with a damaged archived copy (a segment or
 * neighbour missing from R2, or not the bytes its index row recorded) turned
 * into a clear ARCHIVE_DAMAGED: never a 500 that says to retry. The details
 * stay in the log, for the operator who restores the object.
 */
export async function orArchiveDamaged<T>(
  work: Promise<T>,
  message = "The archived copy of this event is missing or damaged, so it cannot be read or checked; retrying will not help until it is restored",
): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (!(error instanceof ArchiveDamagedError)) throw error;
    console.error(error.message);
    throw new ApiError("ARCHIVE_DAMAGED", message);
  }
}
