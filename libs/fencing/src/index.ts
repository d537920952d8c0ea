export { checkOwnership, epochOf, sameEpoch, verifyPeerExpectation } from './epoch.ts';
export type { OwnershipCheck, OwnershipEpoch, PeerExpectation } from './epoch.ts';
export { decideFence } from './fence.ts';
export type { FenceDecision, FenceProof, OwnerEvidence } from './fence.ts';
