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
  /** What a schema carries under `~standard`. */
  export interface Props<Input = unknown, Output = Input> {
    /** The spec's version: 1. */
    readonly version: 1;
    /** The schema library's name, e.g. `zod`. */
    readonly vendor: string;
    /** Checks a value: its typed output, or the issues found. */
    readonly validate: (value: unknown) => Result<Output> | Promise<Result<Output>>;
    /** The schema's input and output types, for type inference only. */
    readonly types?: Types<Input, Output> | undefined;
  }

  /** What `validate` returns: a value, or issues. */
  export type Result<Output> = SuccessResult<Output> | FailureResult;

  /** The value passed: its typed output. */
  export interface SuccessResult<Output> {
    /** The validated value, as the schema outputs it. */
    readonly value: Output;
    /** Absent on success. */
    readonly issues?: undefined;
  }

  /** The value failed: what is wrong with it. */
  export interface FailureResult {
    /** Each problem found. */
    readonly issues: ReadonlyArray<Issue>;
  }

  /** One problem with a value. */
  export interface Issue {
    /** What is wrong, in words. */
    readonly message: string;
    /** Where in the value, from its root; absent for the value itself. */
    readonly path?: ReadonlyArray<PropertyKey | PathSegment> | undefined;
  }

  /** One step of an issue's path, as an object. */
  export interface PathSegment {
    /** The property name or array index. */
    readonly key: PropertyKey;
  }

  /** A schema's input and output types, for type inference only. */
  export interface Types<Input = unknown, Output = Input> {
    /** The type the schema accepts. */
    readonly input: Input;
    /** The type the schema outputs. */
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
