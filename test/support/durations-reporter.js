/**
 * A Jest reporter for CI's log: each test file's wall time, slowest first, after the run (with CI set).
 * Where the minutes go is the first thing to read before making the suite faster.
 */
class DurationsReporter {
  onRunComplete(_contexts, results) {
    const rows = results.testResults
      .map((r) => ({ file: r.testFilePath.replace(`${process.cwd()}/`, ''), s: (r.perfStats.end - r.perfStats.start) / 1000 }))
      .sort((a, b) => b.s - a.s);
    const total = rows.reduce((sum, r) => sum + r.s, 0);
    const lines = rows.map((r) => `${r.s.toFixed(1).padStart(7)} s  ${r.file}`);
    process.stderr.write(`\nTest files by wall time (${rows.length} files, ${total.toFixed(0)} s):\n${lines.join('\n')}\n`);
  }
}

module.exports = DurationsReporter;
