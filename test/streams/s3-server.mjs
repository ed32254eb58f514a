// vitest globalSetup (runs in Node, not workerd): an S3-compatible server for the s3 stream tests.
// s3rver stores the objects and answers as S3 does (PUT, ListObjectsV2, GET). s3rver 3.7.1 checks
// only that a SigV4 request names a known access key id (lib/middleware/authentication.js: "Signature
// version 4 calculation is unimplemented", payload "skip"), so a proxy in front of it verifies every
// request's SigV4 signature and payload hash, written here from AWS's spec ("Create a canonical
// request for Signature Version 4", S3's "Signature Calculations for the Authorization Header")
// and sharing no code with aws4fetch. It refuses as S3 does (403 with an XML <Error>), then forwards
// what verifies to s3rver without the Authorization header (s3rver takes that as anonymous).
// Tests get { endpoint, bucket, region, accessKeyId, secretAccessKey } by inject("s3").
import { createHash, createHmac } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import S3rver from "s3rver";

const ACCESS_KEY_ID = "AKIAWITNESSTEST00001";
// "/" and "+" as real AWS secrets have them.
const SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYWITNESSKEY";
const BUCKET = "witness-audit";
const REGION = "us-east-1";
const SKEW_MS = 15 * 60 * 1000;

const sha256 = (data) => createHash("sha256").update(data).digest("hex");
const hmac = (key, text) => createHmac("sha256", key).update(text).digest();
/** RFC 3986 percent-encoding of everything but unreserved characters (what SigV4 calls UriEncode). */
const uriEncode = (s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** The signature of a request, given its parts as they arrived. */
export function sigV4({ method, path, query, headers, signedHeaders, payloadHash, amzDate, scope, secret }) {
  // S3: the path is encoded once, segment by segment, from its decoded form.
  const uri = path.split("/").map((seg) => uriEncode(decodeURIComponent(seg))).join("/");
  const params = [...new URLSearchParams(query)].map(([k, v]) => [uriEncode(k), uriEncode(v)]);
  params.sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0));
  const canonical = [
    method,
    uri,
    params.map(([k, v]) => `${k}=${v}`).join("&"),
    signedHeaders.map((h) => `${h}:${String(headers[h] ?? "").trim().replace(/\s+/g, " ")}\n`).join(""),
    signedHeaders.join(";"),
    payloadHash,
  ].join("\n");
  const toSign = ["AWS4-HMAC-SHA256", amzDate, scope, sha256(canonical)].join("\n");
  const [date, region, service] = scope.split("/");
  const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), service), "aws4_request");
  return hmac(key, toSign).toString("hex");
}

// AWS's published test vector (sigv4 test suite, "get-vanilla"): the verifier must agree with it.
const vanilla = sigV4({
  method: "GET", path: "/", query: "", headers: { host: "example.amazonaws.com", "x-amz-date": "20150830T123600Z" },
  signedHeaders: ["host", "x-amz-date"], payloadHash: sha256(""), amzDate: "20150830T123600Z",
  scope: "20150830/us-east-1/service/aws4_request", secret: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
});
if (vanilla !== "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31") throw new Error(`SigV4 verifier disagrees with AWS's test vector: ${vanilla}`);

/** null when the request verifies, else [S3 error code, message]. */
function refusal(req, body) {
  const auth = req.headers.authorization ?? "";
  const m = /^AWS4-HMAC-SHA256 Credential=([^/,]+)\/(\d{8}\/[^/,]+\/[^/,]+\/aws4_request), ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/.exec(auth);
  if (!m) return ["AccessDenied", "Access Denied: requests must be signed with AWS Signature Version 4"];
  const [, keyId, scope, signed, signature] = m;
  if (keyId !== ACCESS_KEY_ID) return ["InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records."];
  const amzDate = req.headers["x-amz-date"] ?? "";
  const at = Date.parse(amzDate.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, "$1-$2-$3T$4:$5:$6Z"));
  if (!(Math.abs(Date.now() - at) <= SKEW_MS)) return ["RequestTimeTooSkewed", "The difference between the request time and the current time is too large."];
  if (!scope.startsWith(amzDate.slice(0, 8)) || scope.split("/")[2] !== "s3") return ["AuthorizationHeaderMalformed", "The authorization header is malformed; the scope is wrong."];
  const signedHeaders = signed.split(";");
  if (!signedHeaders.includes("host") || !signedHeaders.includes("x-amz-date") || !signedHeaders.includes("x-amz-content-sha256")) {
    return ["AccessDenied", "host, x-amz-date and x-amz-content-sha256 must be signed"];
  }
  const payloadHash = req.headers["x-amz-content-sha256"] ?? "";
  if (payloadHash !== "UNSIGNED-PAYLOAD" && payloadHash !== sha256(body)) return ["XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed."];
  const [path, query = ""] = req.url.split("?");
  const expected = sigV4({ method: req.method, path, query, headers: req.headers, signedHeaders, payloadHash, amzDate, scope, secret: SECRET });
  if (expected !== signature) return ["SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. Check your key and signing method."];
  return null;
}

export default async function setup({ provide }) {
  const directory = mkdtempSync(join(tmpdir(), "witness-s3-"));
  const s3 = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory, configureBuckets: [{ name: BUCKET }] });
  const { port: innerPort } = await s3.run();
  const proxy = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const refused = refusal(req, body);
      if (refused) {
        const [code, message] = refused;
        res.writeHead(403, { "Content-Type": "application/xml" });
        res.end(`<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>`);
        return;
      }
      const headers = { ...req.headers, "content-length": String(body.length) };
      delete headers.authorization;
      delete headers["transfer-encoding"];
      const inner = http.request({ host: "127.0.0.1", port: innerPort, method: req.method, path: req.url, headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      inner.on("error", (e) => res.writeHead(502).end(String(e)));
      inner.end(body);
    });
  });
  await new Promise((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  provide("s3", {
    endpoint: `http://127.0.0.1:${proxy.address().port}`,
    bucket: BUCKET,
    region: REGION,
    accessKeyId: ACCESS_KEY_ID,
    secretAccessKey: SECRET,
  });
  return async () => {
    proxy.closeAllConnections();
    await new Promise((resolve) => proxy.close(resolve));
    await s3.close();
    rmSync(directory, { recursive: true, force: true });
  };
}
