#!/usr/bin/python3
# bench-window.py: the window under Xvfb, measured from outside.
#
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Run by meson (benchmark "window") under xvfb-run and dbus-run-session.
# A program's first frame is the moment its toplevel window is mapped and
# viewable, seen by polling `xdotool search --onlyvisible --pid`; Kaged and
# gnome-text-editor are measured the same way, each from a clean
# XDG_CONFIG_HOME, XDG_DATA_HOME and XDG_CACHE_HOME.
#
# Kaged's own frames are timed from inside: bench-window-frames, preloaded
# into it, writes when each frame ended and how long it took (from the
# frame clock's first phase to its after-paint, on the clock of
# time.monotonic()), how much of it went on waiting for the X server's
# replies, and the CPU time Kaged's main thread used in it.

import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

KAGED = os.environ["KAGED_BINARY"]
FAKE_PROVIDER = os.environ["FAKE_PROVIDER"]
FILL = os.environ["BENCH_WINDOW_FILL"]
FRAMES_MODULE = os.environ.get("BENCH_WINDOW_FRAMES_MODULE")
N_MESSAGES = 50000
N_TOKENS = int(os.environ.get("BENCH_WINDOW_TOKENS", "20000"))
TOKEN_RATE = 200
LAUNCHES = 5
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
FRAMES_FLUSH = 0.6  # seconds; bench-window-frames writes its file every 250 ms


def clean_env(work):
    env = dict(os.environ)
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        path = os.path.join(work, name.lower())
        os.makedirs(path, exist_ok=True)
        env[name] = path
    env["GSK_RENDERER"] = "cairo"
    env["GDK_BACKEND"] = "x11"
    return env


def with_frames(env, work):
    """env, with the frame timing module preloaded; and the file it writes."""
    path = os.path.join(work, "frames.txt")
    if FRAMES_MODULE is None:
        return env, None
    env = dict(env)
    env["LD_PRELOAD"] = FRAMES_MODULE
    env["BENCH_WINDOW_FRAMES"] = path
    return env, path


def read_records(path, kind, since=None, until=None):
    """[(end in seconds, duration in ms)] of the records of @kind that ended
    in [since, until]: frames (kind None, lines "END DURATION"); the
    iterations of the main loop that worked over 8 ms (kind "busy", lines
    "busy END DURATION"); or, for a frame ended at END, the time it waited
    for the X server's replies (kind "wait") and the CPU time the main
    thread used in it (kind "cpu")."""
    records = []
    if path is None or not os.path.exists(path):
        return records
    with open(path) as f:
        for line in f:
            parts = line.split()
            if kind is not None:
                if len(parts) != 3 or parts[0] != kind:
                    continue
                parts = parts[1:]
            elif len(parts) != 2:
                continue
            end, duration = int(parts[0]) / 1e6, int(parts[1]) / 1000.0
            if (since is None or end >= since) and (until is None or end <= until):
                records.append((end, duration))
    return records


def read_frames(path, since=None, until=None):
    """[(end in seconds, duration in ms)] of the frames ended in [since, until]."""
    return read_records(path, None, since, until)


def first_paint_ms(path, start, timeout=60.0):
    """Milliseconds from start to the end of the first frame, waiting for it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        frames = read_frames(path, since=start)
        if frames:
            return (frames[0][0] - start) * 1000.0
        time.sleep(0.05)
    return None


def describe_frames(frames):
    if not frames:
        return "no frame recorded"
    durations = sorted(d for _, d in frames)
    p99 = durations[min(len(durations) - 1, int(len(durations) * 0.99))]
    over = sum(1 for d in durations if d > 16.0)
    return ("longest frame %.1f ms, 99th percentile %.1f ms, %d of %d frames over 16 ms"
            % (durations[-1], p99, over, len(durations)))


def visible_window(pid):
    out = subprocess.run(["xdotool", "search", "--onlyvisible", "--pid", str(pid)],
                         capture_output=True, text=True).stdout.split()
    return out[0] if out else None


class NoWindow(Exception):
    """The program never showed a window: it exited, or kept running
    without one until the timeout."""


def launch(argv, env, timeout=60.0, started=None):
    """Starts argv; returns (process, seconds to a viewable window, window id).
    Raises NoWindow, saying how the program ended and what it printed on
    stderr, when no window appears."""
    start = time.monotonic()
    if started is not None:
        started.append(start)
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
        while time.monotonic() - start < timeout:
            wid = visible_window(proc.pid)
            if wid is not None:
                return proc, time.monotonic() - start, wid
            if proc.poll() is not None:
                break
            time.sleep(0.002)
        elapsed = time.monotonic() - start
        if proc.poll() is None:
            how = "still running after %.1f s, without a window" % elapsed
        elif proc.returncode < 0:
            how = "killed by signal %d after %.1f s" % (-proc.returncode, elapsed)
        else:
            how = "exited with status %d after %.1f s" % (proc.returncode, elapsed)
        stop(proc)
        stderr.seek(0)
        said = stderr.read().decode("utf-8", "replace").strip().splitlines()
    message = "%s: %s" % (os.path.basename(argv[0]), how)
    if said:
        message += "; it printed on stderr:\n  " + "\n  ".join(said[-10:])
    raise NoWindow(message)


def stop(proc):
    if proc is None:
        return
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def vm_rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def main_thread_ticks(pid):
    with open("/proc/%d/task/%d/stat" % (pid, pid)) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15; fields[0] is field 3.
    return int(fields[11]) + int(fields[12])


def first_frame(name, argv):
    """Seconds from starting argv (a function of a fresh working directory)
    to its first frame, in a fresh directory; raises NoWindow."""
    work = tempfile.mkdtemp(prefix="bench-window-")
    try:
        proc, seconds, _ = launch(argv(work), clean_env(work))
        stop(proc)
        return seconds * 1000.0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def kaged_argv(work, *extra):
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    return [KAGED, "--data-dir", data] + list(extra)


def bench_launch():
    print("# launch to first frame (GSK_RENDERER=cairo, clean XDG dirs)")
    programs = [("kaged", kaged_argv)]
    editor_path = shutil.which("gnome-text-editor")
    if editor_path is None:
        print("gnome-text-editor: not installed; its figure is skipped")
    else:
        programs.append(("gnome-text-editor",
                         lambda work: [editor_path, "--ignore-session"]))
    # The first program started in a new session bus starts the session's
    # services (the desktop portal, which libadwaita asks for the colour
    # scheme): a desktop session has them running. So each program is
    # started once uncounted, and then the two take turns, so a change in
    # the machine's speed during the run weighs on both alike.
    times = {name: [] for name, _ in programs}
    try:
        for name, argv in programs:
            first_frame(name, argv)
        for _ in range(LAUNCHES):
            for name, argv in programs:
                times[name].append(first_frame(name, argv))
    except NoWindow as e:
        print("no window appeared; the launch figures are skipped\n  %s" % e)
        return
    medians = {}
    for name, _ in programs:
        medians[name] = statistics.median(times[name])
        print("%s: launch to first frame %.0f ms (median of %d, after one uncounted: %s)"
              % (name, medians[name], LAUNCHES,
                 ", ".join("%.0f" % t for t in times[name])))
    if len(medians) == 2:
        print("ratio kaged / gnome-text-editor: %.2f (target <= 1.0)"
              % (medians["kaged"] / medians["gnome-text-editor"]))


def open_and_paint(data, work, settle=2.0):
    """Launches kaged on data; returns (ms to mapped, ms to first paint, RSS MB, frames)."""
    env, frames_path = with_frames(clean_env(work), work)
    started = []
    proc, seconds, _ = launch([KAGED, "--data-dir", data], env, started=started)
    try:
        paint = first_paint_ms(frames_path, started[0]) if frames_path else None
        time.sleep(settle)
        rss = vm_rss_mb(proc.pid)
    finally:
        stop(proc)
    frames = read_frames(frames_path, since=started[0])
    return seconds * 1000.0, paint, rss, frames


def bench_large_session():
    print("# open a %d-message conversation" % N_MESSAGES)
    work = tempfile.mkdtemp(prefix="bench-window-")
    try:
        empty = os.path.join(work, "empty")
        os.makedirs(empty)
        data = os.path.join(work, "data")
        os.makedirs(data)
        subprocess.check_call([FILL, data, str(N_MESSAGES)])
        size = os.path.getsize(os.path.join(data, "kaged.db")) / 1e6
        # One uncounted start (see bench_launch()), then empty and full in turns.
        open_and_paint(empty, work, settle=0.5)
        baseline, runs = [], []
        for _ in range(LAUNCHES):
            baseline.append(open_and_paint(empty, work))
            runs.append(open_and_paint(data, work))
        mapped = statistics.median(r[0] for r in runs)
        rss = statistics.median(r[2] for r in runs)
        print("database %.1f MB; launch to a viewable window %.0f ms (median of %d: %s); "
              "RSS %.0f MB (target <= 150 MB)"
              % (size, mapped, LAUNCHES, ", ".join("%.0f" % r[0] for r in runs), rss))
        if all(r[1] is not None for r in runs + baseline):
            paint = statistics.median(r[1] for r in runs)
            empty_paint = statistics.median(r[1] for r in baseline)
            print("launch to first paint of the conversation %.0f ms (median of %d: %s); "
                  "of an empty database %.0f ms (%s); the conversation adds %.0f ms "
                  "(target <= 200 ms)"
                  % (paint, LAUNCHES, ", ".join("%.0f" % r[1] for r in runs),
                     empty_paint, ", ".join("%.0f" % r[1] for r in baseline),
                     paint - empty_paint))
            print("opening, first 2 s: %s"
                  % describe_frames(max((r[3] for r in runs),
                                        key=lambda f: max((d for _, d in f), default=0))))
    except NoWindow as e:
        print("no window appeared; figure skipped\n  %s" % e)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def markdown_tokens(n):
    prose = ("The provider streams a reply in small pieces and the window "
             "shows **each** piece as it comes, with `inline code` too. ").split(" ")
    code = ["```c\n", "static ", "int\n", "add ", "(int ", "a, ", "int ", "b)\n",
            "{\n", "  return ", "a + ", "b;\n", "}\n", "```\n"]
    tokens = []
    i = 0
    while len(tokens) < n:
        tokens.append("\n## Part %d\n\n" % i)
        tokens.extend(w + " " for w in prose if w)
        tokens.append("\n\n- a list item\n- another one\n\n")
        tokens.extend(code)
        i += 1
    return tokens[:n]


def bench_stream():
    n = N_TOKENS
    if n != 20000:
        print("# note: streaming %d tokens instead of 20,000 (BENCH_WINDOW_TOKENS)" % n)
    print("# stream a %d-token Markdown reply with code at %d tokens/s" % (n, TOKEN_RATE))
    work = tempfile.mkdtemp(prefix="bench-window-")
    provider = proc = None
    try:
        tokens = markdown_tokens(n)
        scenario = os.path.join(work, "scenario.json")
        with open(scenario, "w") as f:
            json.dump([{"kind": "openai", "text": "".join(tokens), "chunks": n,
                        "delay_ms": 1000 // TOKEN_RATE}], f)
        log_path = os.path.join(work, "provider.log")
        log = open(log_path, "w+")
        provider = subprocess.Popen([FAKE_PROVIDER, "--port", "0", "--scenario", scenario],
                                    stdout=log, stderr=subprocess.STDOUT)
        url = None
        for _ in range(500):
            log.seek(0)
            match = re.search(r"http://127\.0\.0\.1:\d+", log.read())
            if match:
                url = match.group(0)
                break
            time.sleep(0.01)
        if url is None:
            print("kaged-fake-provider did not start; figure skipped")
            return
        data = os.path.join(work, "data")
        os.makedirs(data)
        env, frames_path = with_frames(clean_env(work), work)
        proc, _, wid = launch([KAGED, "--data-dir", data, "--provider-kind", "openai",
                               "--provider-url", url, "--model", "bench-model"],
                              env)
        time.sleep(1.0)
        subprocess.run(["xdotool", "windowfocus", "--sync", wid], capture_output=True)
        subprocess.run(["xdotool", "type", "--delay", "20", "Write a long answer"],
                       capture_output=True)
        ticks = main_thread_ticks(proc.pid)
        start = time.monotonic()
        subprocess.run(["xdotool", "key", "Return"], capture_output=True)
        db = os.path.join(data, "kaged.db")
        deadline = start + n / TOKEN_RATE * 3 + 30
        done = False
        while time.monotonic() < deadline and not done:
            time.sleep(0.25)
            try:
                with sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=1) as con:
                    row = con.execute("SELECT count(*) FROM messages WHERE role = 'agent' "
                                      "AND status = 'complete'").fetchone()
                done = row[0] > 0
            except sqlite3.Error:
                pass
        elapsed = time.monotonic() - start
        cpu = (main_thread_ticks(proc.pid) - ticks) / CLK_TCK
        if not done:
            print("kaged: the reply did not complete within %.0f s; figure skipped" % elapsed)
            return
        print("stream of %.1f s (nominal %.1f s): main-thread CPU %.1f %% (target <= 15 %%)"
              % (elapsed, n / TOKEN_RATE, 100.0 * cpu / elapsed))
        time.sleep(FRAMES_FLUSH)
        frames = read_frames(frames_path, since=start, until=start + elapsed)
        print("while streaming: %s (target: none over 16 ms)" % describe_frames(frames))
        waits = dict(read_records(frames_path, "wait", start, start + elapsed))
        cpu_times = dict(read_records(frames_path, "cpu", start, start + elapsed))
        slow = ["%.2f s: %.1f ms (%.1f ms waiting for the X server, %.1f ms of CPU)"
                % (end - start, d, waits.get(end, 0.0), cpu_times.get(end, 0.0))
                for end, d in frames if d > 16.0]
        if slow:
            print("  frames over 16 ms, from the press of Enter: " + ", ".join(slow))
        own = [d - waits.get(end, 0.0) for end, d in frames]
        print("  the same frames less their waits for the X server: longest %.1f ms, %d over 16 ms"
              % (max(own, default=0.0), sum(1 for d in own if d > 16.0)))
        busy = [d for _, d in read_records(frames_path, "busy", start, start + elapsed)]
        print("main loop iterations, frames and the work between them: "
              "longest %.1f ms, %d over 16 ms"
              % (max(busy, default=0.0), sum(1 for d in busy if d > 16.0)))
    except NoWindow as e:
        print("no window appeared; figure skipped\n  %s" % e)
    finally:
        stop(proc)
        stop(provider)
        shutil.rmtree(work, ignore_errors=True)


def main():
    if shutil.which("xdotool") is None:
        print("xdotool is not installed: nothing measured")
        return 0
    only = os.environ.get("BENCH_WINDOW_ONLY")  # launch, open or stream
    if only in (None, "launch"):
        bench_launch()
    if only in (None, "open"):
        bench_large_session()
    if only in (None, "stream"):
        bench_stream()
    return 0


if __name__ == "__main__":
    sys.exit(main())
