/**
 * The one place every cfn-lint warning of the synthesised templates is kept, by rule, with why it
 * stays. The deploy test fails on a warning whose rule is not here, and on a rule here that no
 * template raises any more (its explanation would be stale).
 */
export const EXPLAINED_WARNINGS: Record<string, string> = {
  W3005:
    "Each NodejsFunction DependsOn its role and the role's default policy, which the CDK adds so that the " +
    'function exists only once it may write its logs and reach its resources. The role is also named by the ' +
    "function's Role (a GetAtt), so cfn-lint calls that one DependsOn redundant: it is, and harmless (it " +
    'orders nothing differently); the CDK writes it, not Oncely.',
};
