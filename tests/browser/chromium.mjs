// The browser tests' prerequisites: Debian's chromium, driven through playwright-core. The
// README's test command installs both; only a hand-run without them may skip (exit 77, which
// ctest counts as skipped). Under CI a missing one fails.
import { existsSync } from 'node:fs';

export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

// playwright-core's chromium, or the process exits saying what is missing: chromium,
// playwright-core, or `programMissing` (why the test's own programs cannot run, or null).
export async function requireChromium(programMissing) {
  let chromium;
  try {
    ({ chromium } = await import('playwright-core'));
  } catch { /* reported below */ }
  const missing = !existsSync(CHROMIUM) ? `${CHROMIUM} is not installed (apt-get install chromium)`
    : !chromium ? 'playwright-core is not installed (cd tests/browser && npm install)'
    : programMissing;
  if (missing) {
    console.log(`${process.env.CI ? 'FAIL' : 'SKIP'}: ${missing}`);
    process.exit(process.env.CI ? 1 : 77);
  }
  return chromium;
}
