import { decodeServingStatus, encodeHealthCheckRequest, resolvePort } from './probes.ts';

test('HealthCheckRequest encoding', () => {
  expect(encodeHealthCheckRequest('')).toEqual(Buffer.alloc(0));
  expect(encodeHealthCheckRequest('svc')).toEqual(Buffer.from([0x0a, 3, 0x73, 0x76, 0x63]));
});

test.each([
  [[], 0],
  [[0x08, 0x01], 1],
  [[0x08, 0x02], 2],
  [[0x12, 0x01, 0x41, 0x08, 0x01], 1],
])('decodeServingStatus(%j) = %i', (bytes, expected) => {
  expect(decodeServingStatus(Buffer.from(bytes))).toBe(expected);
});

test('named ports resolve through the container ports', () => {
  const container = { name: 'c', ports: [{ name: 'http', containerPort: 8080 }] };
  expect(resolvePort('http', container)).toBe(8080);
  expect(resolvePort(81, container)).toBe(81);
  expect(resolvePort('82', container)).toBe(82);
  expect(() => resolvePort('grpc', container)).toThrow(/no port named grpc/);
});
