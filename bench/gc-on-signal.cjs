// Preloaded into the bench's worker processes (with --expose-gc): SIGUSR2 runs a full garbage
// collection and says so on stderr, so a heap reading after it counts what is held, not garbage.
process.on('SIGUSR2', () => {
  global.gc();
  process.stderr.write('bench: garbage collected\n');
});
