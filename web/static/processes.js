// The process picker: when the port answers for several processes (a prefork server's
// workers, a wrapper's program), the page reads one of them, or all of them merged.
// Pure helpers; app.js owns the <select> and the page's state.
import { formatSize } from './format.js';

const CMDLINE_CHARS = 48;

// "pid 4242 · exact · 12.3 KiB traced · gunicorn: worker [app:app]" (the holder of the port
// says so: a request without pid= is its own).
export function processLabel(p, thisPid) {
  const cmd = shortCommand(String(p.cmdline ?? ''));
  const parts = [`pid ${p.pid}${p.pid === thisPid ? ' (port)' : ''}`, p.mode ?? '?'];
  if (Number.isFinite(p.traced)) parts.push(`${formatSize(p.traced)} traced`);
  parts.push(cmd.length > CMDLINE_CHARS ? `${cmd.slice(0, CMDLINE_CHARS - 1)}…` : cmd);
  return parts.join(' · ');
}

// The program's own name, not the directory it was installed in: "/opt/app/bin/server -c x"
// reads "server -c x" (the full command line is the option's hover title).
export function shortCommand(cmdline) {
  const space = cmdline.indexOf(' ');
  const program = space < 0 ? cmdline : cmdline.slice(0, space);
  const slash = program.lastIndexOf('/');
  return slash < 0 ? cmdline : cmdline.slice(slash + 1);
}

// The <option>s: every process merged, then one per process; 'port' is the holder of the port
// (no pid= at all, as a request without the picker).
export function pickerOptions(list, thisPid) {
  const options = [{ value: 'all', label: `all ${list.length} processes, merged` }];
  for (const p of list) options.push({ value: p.pid === thisPid ? 'port' : String(p.pid), label: processLabel(p, thisPid), title: String(p.cmdline ?? '') });
  return options;
}

// What the processes are, for the header: "2 workers + master" when every other process is a
// child of the one holding the port (a prefork server), else "3 processes".
export function groupName(list, thisPid) {
  const others = list.filter((p) => p.pid !== thisPid);
  const prefork = others.length > 0 && others.length < list.length && others.every((p) => p.ppid === thisPid);
  return prefork ? `${others.length} worker${others.length === 1 ? '' : 's'} + master` : `${list.length} processes`;
}

// Traced bytes and RSS of every process that answered: the cards of the merged view.
export function sumOf(list) {
  const live = list.filter((p) => Number.isFinite(p.traced));
  return {
    traced: live.reduce((s, p) => s + p.traced, 0),
    rss: live.reduce((s, p) => s + (p.rss ?? 0), 0),
    answered: live.length,
  };
}
