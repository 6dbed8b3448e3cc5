// What the suite under test is started with (setup/wick.ts) besides the
// scripts (test/scripts) and agent templates (test/agents).

/** Bearer tokens of the users; "operator" is an operator (-operator-users). */
export const TOKENS = {
  alice: "clients-alice-token-0123456789",
  bob: "clients-bob-token-0123456789",
  operator: "clients-operator-token-0123456789",
} as const;

/** The organisation the users belong to (-knowledge-orgs). */
export const ORG = "acme";
