/**
 * The Standard Schema interface (https://standardschema.dev, v1), which zod (classic and mini),
 * Valibot, ArkType and others implement: a consumer's payload validator may be any of them. Its
 * types are copied here, as the spec invites, rather than depended on.
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  /** The spec's properties: its version, the library's name and its `validate`. */
  readonly '~standard': StandardSchemaV1.Props<Input, Output>;
}

/** The types of the Standard Schema spec, as it defines them. */
export declare namespace StandardSchemaV1 {
  export interface Props<Input = unknown, Output = Input> {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => Result<Output> | Promise<Result<Output>>;
    readonly types?: Types<Input, Output> | undefined;
  }

  export type Result<Output> = SuccessResult<Output> | FailureResult;

  export interface SuccessResult<Output> {
    readonly value: Output;
    readonly issues?: undefined;
  }

  export interface FailureResult {
    readonly issues: ReadonlyArray<Issue>;
  }

  export interface Issue {
    readonly message: string;
    readonly path?: ReadonlyArray<PropertyKey | PathSegment> | undefined;
  }

  export interface PathSegment {
    readonly key: PropertyKey;
  }

  export interface Types<Input = unknown, Output = Input> {
    readonly input: Input;
    readonly output: Output;
  }
}

/** Every problem a validator found, as "path: message" (`body` for the value itself), for errors a person can act on. */
export function describeIssues(issues: readonly StandardSchemaV1.Issue[]): string {
  return issues
    .map((issue) => {
      const path = (issue.path ?? [])
        .map((segment) => String(typeof segment === 'object' ? segment.key : segment))
        .join('.');
      return `${path || 'body'}: ${issue.message}`;
    })
    .join('; ');
}
