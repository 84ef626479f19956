import * as z from 'zod';

/**
 * `z.strictObject(shape())` built at its first use rather than at import: a `z.lazy` around it,
 * which parses, infers and converts to JSON Schema as the object itself does. For the schemas a
 * function's cold start need not build (each zod schema costs ≈ 15–30 µs to construct, and the
 * resource and payload schemas are several hundred of them; issue 25 cold starts). Not for a
 * schema whose `.shape` or `.extend` is read: a `ZodLazy` has neither.
 * @param shape the object's shape, as `z.strictObject` takes it
 */
export function lazyStrictObject<Shape extends z.core.$ZodLooseShape>(
  shape: () => Shape,
): z.ZodLazy<z.ZodObject<Shape, z.core.$strict>> {
  return z.lazy(() => z.strictObject(shape()));
}

/**
 * `z.object(shape())` (unknown keys stripped) built at its first use, as {@link lazyStrictObject}.
 * @param shape the object's shape, as `z.object` takes it
 */
export function lazyObject<Shape extends z.core.$ZodLooseShape>(
  shape: () => Shape,
): z.ZodLazy<z.ZodObject<Shape, z.core.$strip>> {
  return z.lazy(() => z.object(shape()));
}
