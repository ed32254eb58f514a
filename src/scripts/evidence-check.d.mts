export { checkEvidence, EVIDENCE_TYPE, type EvidenceResult } from "../client/evidence-check.js";
