// Type-level assertions for the checks in this folder: they only compile
// when the types they name agree.

/** Equal is true when X and Y are the same type (not merely assignable). */
export type Equal<X, Y> =
  (<T>() => T extends X ? 1 : 2) extends (<T>() => T extends Y ? 1 : 2) ? true : false;

/** expect<Equal<A, B>>(true) compiles only when A and B are the same type. */
export function expect<T extends true>(ok: T): T {
  return ok;
}

/** exact<T>()(v) compiles only when v's type is exactly T. */
export function exact<T>() {
  return <U extends T>(v: U, ...rest: Equal<T, U> extends true ? [] : [never]): U => {
    void rest;
    return v;
  };
}
