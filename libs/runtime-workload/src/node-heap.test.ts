import { memoryQuantityBytes, nodeHeapOptions } from './node-heap.ts';

const MIB = 1024 * 1024;

describe('memoryQuantityBytes', () => {
  it.each([
    ['160Mi', 160 * MIB],
    ['1Gi', 1024 * MIB],
    ['1.5Gi', 1536 * MIB],
    ['512M', 512e6],
    ['64Ki', 65_536],
    ['134217728', 134_217_728],
    [' 96Mi ', 96 * MIB],
    ['100m', undefined],
    ['1e9', undefined],
    ['-1Gi', undefined],
    ['Mi', undefined],
    ['', undefined],
  ])('%j: %s', (quantity, bytes) => {
    expect(memoryQuantityBytes(quantity)).toBe(bytes);
  });
});

describe('nodeHeapOptions', () => {
  it.each([
    // limit MiB, semi-space, old space: limit - 64 - 3 * semi-space, at least 32
    [64, 1, 32],
    [96, 1, 32],
    [128, 1, 61],
    [192, 1, 125],
    [256, 2, 186],
    [384, 3, 311],
    [512, 4, 436],
    [1024, 8, 936],
    [2048, 16, 1936],
    [4096, 16, 3984],
  ])('%i MiB: semi-space %i, old space %i', (limitMib, semiSpace, oldSpace) => {
    expect(nodeHeapOptions(limitMib * MIB)).toBe(`--max-semi-space-size=${String(semiSpace)} --max-old-space-size=${String(oldSpace)}`);
  });
});
