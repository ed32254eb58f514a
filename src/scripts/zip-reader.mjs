// Reads the files of a zip archive one at a time, from disk, for npm run export:verify: an
// evidence export's archive (GET /v1/jobs/{id}/archive) can hold dozens of parts of ~100 MB, so
// the archive is never loaded whole. Its table of contents (the central directory, ZIP64
// included) is read from the end of the file; an entry is read only when asked for, its bytes
// streamed through fflate's Inflate, and checked against the size and CRC-32 the archive gives.
// Every refusal is a ZipError whose message is one line.
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import * as zlib from "node:zlib";
import { Inflate } from "fflate";

export class ZipError extends Error {}

const CHUNK = 1 << 20;
// An export part is at most ~100 MB; one byte array cannot exceed about 2 GB anyway.
const MAX_ENTRY_BYTES = 2 ** 31 - 1;
const MAX_DIRECTORY_BYTES = 64 << 20;

let table;
/** CRC-32 (the zip's, IEEE), node:zlib's where Node has it (22.2+). */
function crc32(bytes, previous = 0) {
  if (zlib.crc32) return zlib.crc32(bytes, previous);
  table ??= Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  let c = ~previous >>> 0;
  for (let i = 0; i < bytes.length; i++) c = table[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
}

const u16 = (b, at) => b[at] | (b[at + 1] << 8);
const u32 = (b, at) => (b[at] | (b[at + 1] << 8) | (b[at + 2] << 16) | (b[at + 3] << 24)) >>> 0;
const u64 = (b, at) => u32(b, at) + u32(b, at + 4) * 2 ** 32;

/** A name that would land outside the folder it is unpacked into: absolute, a drive, or `..`. */
const escapes = (name) => /^[/\\]|^[A-Za-z]:/.test(name) || name.split(/[/\\]/).includes("..") || name.includes("\0");

/**
 * Opens the zip at `path`: { names, read(name), close() }. `names` are its files (folders
 * left out), at the root of the archive or, when every file is under one top folder, relative to
 * that folder. `read(name)` gives an entry's bytes (null for a name it does not hold).
 */
export function openZip(path) {
  const fd = openSync(path, "r");
  try {
    return readDirectory(fd, fstatSync(fd).size);
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

function readAt(fd, position, length) {
  const buffer = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const n = readSync(fd, buffer, done, length - done, position + done);
    if (n === 0) throw new ZipError("it is cut short (an entry runs past the end of the file)");
    done += n;
  }
  return buffer;
}

function readDirectory(fd, size) {
  // The end-of-central-directory record: 22 bytes and a comment of at most 65,535, at the very end.
  const tailLength = Math.min(size, 22 + 0xffff + 20);
  const tail = readAt(fd, size - tailLength, tailLength);
  let end = -1;
  for (let at = tailLength - 22; at >= 0; at--) {
    if (u32(tail, at) === 0x06054b50 && at + 22 + u16(tail, at + 20) === tailLength) {
      end = at;
      break;
    }
  }
  if (end === -1) throw new ZipError("it is not a zip archive, or it is cut short (no end-of-archive record)");
  let entries = u16(tail, end + 10);
  let directorySize = u32(tail, end + 12);
  let directoryAt = u32(tail, end + 16);
  let directoryEnd = size - tailLength + end;
  if (u16(tail, end + 4) !== 0 || u16(tail, end + 6) !== 0) throw new ZipError("it is one part of a multi-part (split) archive");
  // ZIP64: a locator just before the record points at the 64-bit one.
  if (end >= 20 && u32(tail, end - 20) === 0x07064b50) {
    const at = u64(tail, end - 12);
    if (at + 56 > directoryEnd) throw new ZipError("its ZIP64 end-of-archive record is out of place (corrupt)");
    const record = readAt(fd, at, 56);
    if (u32(record, 0) !== 0x06064b50) throw new ZipError("its ZIP64 end-of-archive record is missing (corrupt)");
    entries = u64(record, 32);
    directorySize = u64(record, 40);
    directoryAt = u64(record, 48);
    directoryEnd = at;
  }
  if (directoryAt + directorySize > directoryEnd) throw new ZipError("its table of contents lies past its end (corrupt or cut short)");
  if (directorySize > MAX_DIRECTORY_BYTES) throw new ZipError(`its table of contents is ${directorySize} bytes, far more than an export's`);
  const directory = readAt(fd, directoryAt, directorySize);
  const files = [];
  const utf8 = new TextDecoder();
  let at = 0;
  for (let i = 0; i < entries; i++) {
    if (at + 46 > directory.length || u32(directory, at) !== 0x02014b50) throw new ZipError(`its table of contents is corrupt (entry ${i + 1} of ${entries})`);
    const flags = u16(directory, at + 8);
    const nameLength = u16(directory, at + 28);
    const extraLength = u16(directory, at + 30);
    const name = utf8.decode(directory.subarray(at + 46, at + 46 + nameLength));
    const entry = {
      name,
      flags,
      method: u16(directory, at + 10),
      crc: u32(directory, at + 16),
      compressed: u32(directory, at + 20),
      size: u32(directory, at + 24),
      offset: u32(directory, at + 42),
    };
    // ZIP64 extra field: the 64-bit values of exactly those fields that hold 0xffffffff, in order.
    const extra = directory.subarray(at + 46 + nameLength, at + 46 + nameLength + extraLength);
    for (let e = 0; e + 4 <= extra.length; e += 4 + u16(extra, e + 2)) {
      if (u16(extra, e) !== 0x0001) continue;
      let field = e + 4;
      for (const key of ["size", "compressed", "offset"]) {
        if (entry[key] === 0xffffffff && field + 8 <= e + 4 + u16(extra, e + 2)) {
          entry[key] = u64(extra, field);
          field += 8;
        }
      }
    }
    at += 46 + nameLength + extraLength + u16(directory, at + 32);
    if (escapes(name)) throw new ZipError(`its entry ${JSON.stringify(name)} points outside the archive (an absolute or ".." path): refused`);
    if (name.endsWith("/") || name.endsWith("\\")) continue;
    files.push(entry);
  }
  // All files under one top folder (an archive of the folder itself): names relative to it.
  const top = files[0]?.name.split("/")[0];
  const nested = files.length > 0 && files.every((f) => f.name.includes("/") && f.name.split("/")[0] === top);
  const byName = new Map();
  for (const file of files) {
    const name = nested ? file.name.slice(top.length + 1) : file.name;
    if (byName.has(name)) throw new ZipError(`it holds ${name} twice: refused (which one would be checked?)`);
    byName.set(name, file);
  }
  let open = true;
  return {
    names: [...byName.keys()],
    read: (name) => {
      if (!open) throw new Error("the archive is closed");
      const file = byName.get(name);
      return file ? readEntry(fd, file, name, directoryAt) : null;
    },
    close: () => {
      if (open) closeSync(fd);
      open = false;
    },
  };
}

/** One entry's bytes, streamed from disk through Inflate; refuses one whose size or CRC-32 differs. */
function readEntry(fd, file, name, directoryAt) {
  const corrupt = (why) => new ZipError(`its entry ${name} is corrupt (${why})`);
  if (file.flags & 1) throw new ZipError(`its entry ${name} is encrypted`);
  if (file.method !== 0 && file.method !== 8) throw new ZipError(`its entry ${name} uses compression method ${file.method}; only stored and deflated entries are read`);
  if (file.size > MAX_ENTRY_BYTES) throw new ZipError(`its entry ${name} says it unpacks to ${file.size} bytes, more than one file can hold`);
  const header = readAt(fd, file.offset, 30);
  if (u32(header, 0) !== 0x04034b50) throw corrupt("no local header where the table of contents points");
  const start = file.offset + 30 + u16(header, 26) + u16(header, 28);
  if (start + file.compressed > directoryAt) throw corrupt("its data runs into the table of contents");
  const out = new Uint8Array(file.size);
  let written = 0;
  let crc = 0;
  const take = (chunk) => {
    if (written + chunk.length > out.length) throw corrupt(`it unpacks to more than the ${file.size} bytes it declares`);
    out.set(chunk, written);
    written += chunk.length;
    crc = crc32(chunk, crc);
  };
  const inflate = file.method === 8 ? new Inflate((chunk) => take(chunk)) : null;
  try {
    for (let done = 0; done < file.compressed || (inflate && done === 0); ) {
      const length = Math.min(CHUNK, file.compressed - done);
      const chunk = readAt(fd, start + done, length);
      done += length;
      if (inflate) inflate.push(chunk, done >= file.compressed);
      else take(chunk);
    }
  } catch (error) {
    if (error instanceof ZipError) throw error;
    throw corrupt(String(error?.message ?? error));
  }
  if (written !== file.size) throw corrupt(`it unpacks to ${written} bytes, not the ${file.size} it declares`);
  if (crc !== file.crc) throw corrupt("its CRC-32 does not match");
  return out;
}
