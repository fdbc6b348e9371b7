/**
 * The browser the web chat's test drives (test/web-chat.e2e.spec.ts, through playwright-core):
 * Debian's `chromium` package at /usr/bin/chromium, installed with apt-get when it is missing
 * (as root; anyone else is told what to run). Nothing is downloaded at test time besides that
 * package: playwright-core brings no browser of its own. `CHROMIUM_PATH` names another
 * Chromium to use instead (it must exist; nothing is installed then).
 *
 * Run by the system tests' global setup (test/global-setup.ts), or alone: `npm run setup:browser`.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const DEBIAN_CHROMIUM = '/usr/bin/chromium';

export class BrowserSetupError extends Error {}

/** The Chromium to launch: CHROMIUM_PATH, else Debian's, installed now if it is missing. */
export function ensureBrowser(log: (line: string) => void = (line) => process.stderr.write(`[browser] ${line}\n`)): string {
  const wanted = process.env.CHROMIUM_PATH;
  if (wanted) {
    if (!existsSync(wanted)) throw new BrowserSetupError(`CHROMIUM_PATH is ${wanted}, and there is no such file: point it at a Chromium, or unset it to use Debian's chromium package.`);
    return wanted;
  }
  if (existsSync(DEBIAN_CHROMIUM)) return DEBIAN_CHROMIUM;
  if (process.platform !== 'linux' || !existsSync('/usr/bin/apt-get')) {
    throw new BrowserSetupError(`The web chat's test needs Chromium: install it and set CHROMIUM_PATH to its executable (on Debian or Ubuntu: apt-get install -y chromium).`);
  }
  if (process.getuid?.() !== 0) {
    throw new BrowserSetupError(`The web chat's test needs Debian's chromium package, which is not installed: run \`sudo apt-get update && sudo apt-get install -y chromium\` (or \`npm run setup:browser\` as root), then run the tests again.`);
  }
  log(`${DEBIAN_CHROMIUM} is missing: installing Debian's chromium package (apt-get update && apt-get install -y chromium)`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [['update'], ['install', '-y', 'chromium']]) {
    const run = spawnSync('apt-get', args, { env, stdio: ['ignore', 'inherit', 'inherit'] });
    if (run.status !== 0) throw new BrowserSetupError(`apt-get ${args.join(' ')} failed (${run.error?.message ?? `exit ${run.status ?? run.signal}`}); install the chromium package by hand and run again.`);
  }
  if (!existsSync(DEBIAN_CHROMIUM)) throw new BrowserSetupError(`apt-get installed chromium, but ${DEBIAN_CHROMIUM} is still missing.`);
  log(`installed ${DEBIAN_CHROMIUM}`);
  return DEBIAN_CHROMIUM;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    process.stdout.write(`${ensureBrowser()}\n`);
  } catch (error) {
    if (!(error instanceof BrowserSetupError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
}
