#!/usr/bin/env python3
"""`make bench`: airtap side by side with streamripper, icecast2 and mpg123 (bench/README.md).

Every scenario runs against airtap-teststation on 127.0.0.1 only. CPU and peak RSS of whole
processes come from wait4()'s rusage (the process and its threads); RSS over time and CPU over
a window come from /proc/PID/status and /proc/PID/stat. Writes bench/results.md and
bench/results.json. Not part of `make test`: it takes about 20 minutes.

    tools/bench/bench.py [--bin-dir DIR] [--only 1,2,...] [--quick]
"""
import argparse
import ctypes
import glob
import json
import os
import platform
import resource
import re
import selectors
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLK_TCK = os.sysconf("SC_CLK_TCK")
LIBC = ctypes.CDLL(None, use_errno=True)
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
BYTES_PER_HOUR_128K = 128000 // 8 * 3600
HOST = "127.0.0.1"

children = []  # every Popen we started, stopped by PID at exit


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, 65536) if hard != resource.RLIM_INFINITY else 65536
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def spawn(cmd, env=None, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=None):
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, env=env, cwd=cwd,
                         preexec_fn=raise_nofile)
    children.append(p)
    return p


def reap(p, timeout=None, sig=signal.SIGTERM):
    """wait4() the process: (exit status, cpu seconds, peak RSS MB). Sends `sig` after `timeout`."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid == p.pid:
            break
        if deadline is not None and time.monotonic() > deadline:
            try:
                os.kill(p.pid, sig)
            except ProcessLookupError:
                pass
            deadline = time.monotonic() + 5
            sig = signal.SIGKILL
        time.sleep(0.02)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p in children:
        children.remove(p)
    return p.returncode, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0


def stop_all():
    for p in list(children):
        if p.poll() is None:
            try:
                os.kill(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    for p in list(children):
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
    children.clear()


def running(p):
    """True while the child has not exited; never reaps it (wait4 in reap() needs the zombie)."""
    try:
        return os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
    except ChildProcessError:
        return False


def proc_cpu(pid):
    """CPU seconds of the live threads, in nanoseconds' precision (/proc/PID/task/*/schedstat);
    falls back to /proc/PID/stat's clock ticks."""
    try:
        total = 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (FileNotFoundError, ProcessLookupError):
                pass
        if total:
            return total / 1e9
    except (FileNotFoundError, ProcessLookupError):
        pass
    return proc_cpu_all(pid)


def proc_cpu_all(pid):
    """CPU seconds of the whole process, threads that have exited included: for a window in which
    pool threads come and go. The process's CPU-time clock (clock_getcpuclockid, nanoseconds);
    /proc/PID/stat's clock ticks (10 ms, 5 % of a minute's playback) where it cannot be read."""
    clock = ctypes.c_int()
    if LIBC.clock_getcpuclockid(pid, ctypes.byref(clock)) == 0:
        try:
            return time.clock_gettime(clock.value)
        except OSError:
            pass
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_status(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024.0  # kB -> MB
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def proc_wchar(pid):
    try:
        with open(f"/proc/{pid}/io") as f:
            for line in f:
                if line.startswith("wchar:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def read_listening(p, what, timeout=120):
    """Reads `listening 127.0.0.1:PORT` from a child's stdout."""
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    buf = b""
    while time.monotonic() < deadline:
        if not running(p):
            rc, _, _ = reap(p)
            raise RuntimeError(f"{what} exited with {rc} before listening")
        for _ in sel.select(timeout=0.2):
            chunk = os.read(p.stdout.fileno(), 4096)
            buf += chunk
            for line in buf.split(b"\n"):
                if line.startswith(b"listening "):
                    port = int(line.split(b":")[-1])
                    sel.close()
                    return port
    raise RuntimeError(f"{what} did not print its listening line in {timeout} s")


class Station:
    """One airtap-teststation; stopped by PID."""

    def __init__(self, bins, *args):
        self.proc = spawn([f"{bins}/airtap-teststation", "--port", "0", *args], stdout=subprocess.PIPE)
        self.port = read_listening(self.proc, "airtap-teststation")
        self.url = f"http://{HOST}:{self.port}/stream"

    def stop(self):
        if running(self.proc):
            os.kill(self.proc.pid, signal.SIGTERM)
        reap(self.proc, timeout=5)


def scratch_dir(base, name):
    d = tempfile.mkdtemp(prefix=f"{name}-", dir=base)
    return d


def dir_bytes(d):
    total = 0
    for root, _, files in os.walk(d):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


# ---------------------------------------------------------------------------------------------
# The tools' command lines.

def airtap_record(bins, url, out, silence=True, extra=()):
    cmd = [f"{bins}/airtap", "record", url, "--out", out, "--retries", "0", *extra]
    if not silence:
        cmd.append("--no-silence-search")
    return cmd


def streamripper_cmd(url, out, silence=True, seconds=None):
    cmd = ["streamripper", url, "-d", out, "-s", "-c", "--quiet"]
    if not silence:
        cmd.append("--xs-none")
    if seconds:
        cmd += ["-l", str(int(seconds))]
    return cmd


# ---------------------------------------------------------------------------------------------
# Scenario 1: rip cost.

def remove_scratch(out):
    """The output folder and a library index beside it (`out.library.sqlite` and its journal files)."""
    shutil.rmtree(out, ignore_errors=True)
    for path in glob.glob(out + ".library.sqlite*"):
        os.remove(path)


def scenario_rip(cfg, bins, shm):
    res = {"fast": {}, "realtime": {}}
    hours = cfg["rip_fast_hours"]
    st = Station(bins, "--fast", "--max-seconds", str(int(hours * 3600)), "--track-seconds", "180",
                 "--gap-seconds", "1")
    variants = [
        ("airtap", lambda u, o: airtap_record(bins, u, o, silence=True)),
        ("streamripper", lambda u, o: streamripper_cmd(u, o, silence=True)),
        ("airtap --no-silence-search", lambda u, o: airtap_record(bins, u, o, silence=False)),
        ("streamripper --xs-none", lambda u, o: streamripper_cmd(u, o, silence=False)),
        # The library on (ReplayGain, fingerprints, the index), its index beside the output folder.
        ("airtap --library", lambda u, o: airtap_record(bins, u, o, silence=True, extra=("--library", o + ".library.sqlite"))),
    ]
    for name, _ in variants:
        res["fast"][name] = []
    try:
        for rnd in range(cfg["pairs"]):
            for name, make in variants:  # A B A B ...: the tools alternate within every round
                out = scratch_dir(shm, "rip")
                t0 = time.monotonic()
                p = spawn(make(st.url, out))
                rc, cpu, rss = reap(p, timeout=600)
                wall = time.monotonic() - t0
                got = dir_bytes(out)
                remove_scratch(out)
                audio_h = got / BYTES_PER_HOUR_128K
                res["fast"][name].append({"exit": rc, "cpu_s": cpu, "peak_rss_mb": rss, "wall_s": wall,
                                          "bytes_written": got, "audio_hours_written": audio_h,
                                          "cpu_s_per_audio_hour": cpu / hours})
                log(f"rip fast {name}: rc={rc} cpu={cpu:.2f}s rss={rss:.1f}MB wall={wall:.1f}s written={audio_h:.3f}h")
    finally:
        st.stop()

    # Real-time pace: all variants x copies at once for `rt_seconds`, extrapolated to an hour.
    secs = cfg["rip_rt_seconds"]
    st = Station(bins, "--realtime", "--max-seconds", str(secs), "--track-seconds", "20", "--gap-seconds", "1")
    try:
        running = []
        for copy in range(cfg["pairs"]):
            for name, make in variants:
                out = scratch_dir(shm, "riprt")
                running.append((name, out, spawn(make(st.url, out))))
        # Steady state: CPU between 10 s in and 2 s before the end, without start-up and shutdown.
        t0 = time.monotonic()
        w0, w1 = 10.0, secs - 2.0
        time.sleep(w0)
        cpu_a = [proc_cpu(p.pid) for _, _, p in running]
        time.sleep(max(0.0, t0 + w1 - time.monotonic()))
        cpu_b = [proc_cpu(p.pid) for _, _, p in running]
        for (name, out, p), ca, cb in zip(running, cpu_a, cpu_b):
            rc, cpu, rss = reap(p, timeout=secs + 30)
            got = dir_bytes(out)
            remove_scratch(out)
            res["realtime"].setdefault(name, []).append({
                "exit": rc, "cpu_s": cpu, "peak_rss_mb": rss, "bytes_written": got,
                "cpu_s_per_audio_hour": cpu * 3600 / secs,
                "steady_cpu_s": cb - ca, "steady_seconds": w1 - w0,
                "steady_cpu_s_per_audio_hour": (cb - ca) * 3600 / (w1 - w0)})
            log(f"rip realtime {name}: rc={rc} cpu={cpu:.3f}s rss={rss:.1f}MB written={got}")
    finally:
        st.stop()
    return res


# ---------------------------------------------------------------------------------------------
# Scenario 2: long rip memory (airtap only; streamripper's peak is in scenario 1).

def scenario_long(cfg, bins, shm):
    hours = cfg["long_hours"]
    st = Station(bins, "--fast", "--max-seconds", str(int(hours * 3600)), "--track-seconds", "180",
                 "--gap-seconds", "1")
    res = {"hours": hours, "samples": []}
    try:
        out = scratch_dir(shm, "long")
        p = spawn(airtap_record(bins, st.url, out))
        marks = [0.25, 0.5, 1, 2, 3, 4]
        at_mark = {}
        while running(p):
            w = proc_wchar(p.pid)
            r = proc_status(p.pid, "VmRSS")
            if w is not None and r is not None:
                h = w / BYTES_PER_HOUR_128K
                res["samples"].append((round(h, 4), r))
                for m in marks:
                    if m <= hours and h >= m and m not in at_mark:
                        at_mark[m] = r
            time.sleep(0.01)
        rc, cpu, rss = reap(p)
        got = dir_bytes(out)
        shutil.rmtree(out, ignore_errors=True)
        res.update({"exit": rc, "cpu_s": cpu, "peak_rss_mb": rss, "audio_hours_written": got / BYTES_PER_HOUR_128K,
                    "rss_mb_at_hour": {str(k): v for k, v in sorted(at_mark.items())}})
        # Keep the raw samples small (but keep the last one: the 4 h point).
        step = max(1, len(res["samples"]) // 200)
        res["samples"] = res["samples"][::step] + res["samples"][-1:]
        log(f"long rip: rc={rc} cpu={cpu:.2f}s peak={rss:.1f}MB at-hour={res['rss_mb_at_hour']}")
    finally:
        st.stop()
    return res


# ---------------------------------------------------------------------------------------------
# Scenario 3: many stations.

def write_stations(out, n, url, name="Bench Station"):
    """stations.json in `out` with stations s0 … sN-1, all of `url`; returns its path."""
    path = os.path.join(out, "stations.json")
    with open(path, "w") as f:
        json.dump({"stations": [{"id": f"s{i}", "name": f"{name} {i}", "url": url} for i in range(n)]}, f)
    return path


def scenario_many(cfg, bins, shm):
    secs = cfg["many_seconds"]
    res = {"seconds": secs, "runs": []}
    st = Station(bins, "--realtime", "--max-seconds", str(secs), "--track-seconds", "10", "--gap-seconds", "1")
    try:
        for n in cfg["many_n"]:
            for tool in ("airtap", "streamripper"):
                if tool == "streamripper" and n > cfg["many_sr_max"]:
                    continue
                out = scratch_dir(shm, f"many{n}")
                t0 = time.monotonic()
                if tool == "airtap":
                    path = write_stations(out, n, st.url)
                    procs = [spawn([f"{bins}/airtap", "record", *[f"s{i}" for i in range(n)], "--stations", path,
                                    "--out", os.path.join(out, "rec"), "--retries", "0"])]
                else:
                    procs = []
                    for i in range(n):
                        d = os.path.join(out, f"s{i}")
                        os.makedirs(d)
                        procs.append(spawn(streamripper_cmd(st.url, d, seconds=secs + 10)))
                # Sum of resident memory across the processes, sampled in the second half of the run.
                rss_samples = []
                while time.monotonic() - t0 < secs * 0.9:
                    time.sleep(0.5)
                    if time.monotonic() - t0 > secs * 0.5:
                        rss_samples.append(sum(proc_status(p.pid, "VmRSS") or 0 for p in procs))
                cpu = 0.0
                peak = 0.0
                codes = []
                for p in procs:
                    rc, c, r = reap(p, timeout=secs + 30)
                    cpu += c
                    peak += r
                    codes.append(rc)
                wall = time.monotonic() - t0
                got = dir_bytes(out)
                shutil.rmtree(out, ignore_errors=True)
                expected = n * secs * 16000
                run = {"tool": tool, "n": n, "cpu_s": cpu, "cpu_core_fraction": cpu / secs,
                       "sum_peak_rss_mb": peak, "sum_rss_mb_sampled": max(rss_samples) if rss_samples else None,
                       "wall_s": wall, "bytes_written": got, "bytes_fraction": got / expected,
                       "nonzero_exits": sum(1 for c in codes if c != 0)}
                res["runs"].append(run)
                log(f"many n={n} {tool}: cpu={cpu:.2f}s ({100*cpu/secs:.1f}% of a core) sum-peak-rss={peak:.0f}MB "
                    f"sampled-rss={run['sum_rss_mb_sampled']} written={got/expected:.2%} bad-exits={run['nonzero_exits']}")
        for n in cfg["many_fleet_n"]:
            res["runs"].append(many_fleet(bins, shm, st.url, n, secs))
    finally:
        st.stop()
    return res


def many_fleet(bins, shm, url, n, secs):
    """One airtap with a fleet's settings (no silence search; the library is off by default): CPU
    in the steady state (from 40 % to 90 % of the run, past everyone's connecting), RSS and open
    descriptors sampled in that window."""
    out = scratch_dir(shm, f"fleet{n}")
    path = write_stations(out, n, url)
    t0 = time.monotonic()
    p = spawn([f"{bins}/airtap", "record", *[f"s{i}" for i in range(n)], "--stations", path,
               "--out", os.path.join(out, "rec"), "--retries", "0", "--no-silence-search", "--for", f"{secs}s"])
    while time.monotonic() - t0 < secs * 0.4:
        time.sleep(0.5)
    cpu0, w0 = proc_cpu(p.pid), time.monotonic()
    rss, fds = [], []
    while time.monotonic() - t0 < secs * 0.9:
        time.sleep(1.0)
        rss.append(proc_status(p.pid, "VmRSS") or 0)
        try:
            fds.append(len(os.listdir(f"/proc/{p.pid}/fd")))
        except OSError:
            pass
    cpu1, w1 = proc_cpu(p.pid), time.monotonic()
    rc, cpu, peak = reap(p, timeout=secs + 60)
    got = dir_bytes(out)
    shutil.rmtree(out, ignore_errors=True)
    run = {"tool": "airtap fleet", "n": n, "cpu_s": cpu, "steady_core_fraction": (cpu1 - cpu0) / (w1 - w0),
           "peak_rss_mb": peak, "rss_mb_sampled": max(rss) if rss else None,
           "descriptors": max(fds) if fds else None, "bytes_fraction": got / (n * secs * 16000), "exit": rc}
    log(f"many fleet n={n}: steady {100*run['steady_core_fraction']:.1f}% of a core, rss {run['rss_mb_sampled']} MB, "
        f"descriptors {run['descriptors']}, written {run['bytes_fraction']:.2%}, exit {rc}")
    return run


# ---------------------------------------------------------------------------------------------
# Scenario 8: HLS stations against ICY ones, side by side (one process of N stations each, the
# same real-time station's MP3 as ICY, as packed-audio HLS and as MPEG-TS HLS in 2 s segments),
# and ffmpeg -c copy of the same HLS as the peer (one process per station: it takes one URL).

def scenario_hls(cfg, bins, shm):
    secs, n, n_ffmpeg = cfg["hls_seconds"], cfg["hls_n"], cfg["hls_ffmpeg_n"]
    res = {"seconds": secs, "n": n, "ffmpeg_n": n_ffmpeg, "runs": {}}
    ts = Station(bins, "--realtime", "--track-seconds", "10", "--gap-seconds", "1", "--hls", "mpegts")
    pk = Station(bins, "--realtime", "--track-seconds", "10", "--gap-seconds", "1", "--hls", "packed-audio")
    try:
        urls = {"ICY": ts.url, "HLS packed audio": pk.url.replace("/stream", "/hls/128k/index.m3u8"),
                "HLS MPEG-TS": ts.url.replace("/stream", "/hls/128k/index.m3u8")}
        running_set = []
        for name, url in urls.items():
            out = scratch_dir(shm, "hls")
            path = write_stations(out, n, url, name="Bench")
            cmd = [f"{bins}/airtap", "record", *[f"s{i}" for i in range(n)], "--stations", path,
                   "--out", os.path.join(out, "rec"), "--retries", "0", "--for", f"{secs}s"]
            running_set.append((f"airtap {name}", n, out, [spawn(cmd)]))
            if name == "HLS MPEG-TS":
                # What ffmpeg -c copy does: frames to files, no decoding (no silence search, no
                # ReplayGain, no library fingerprint).
                out2 = scratch_dir(shm, "hlscopy")
                shutil.copy(path, os.path.join(out2, "stations.json"))
                copy = cmd[:]
                copy[copy.index(path)] = os.path.join(out2, "stations.json")
                copy[copy.index(os.path.join(out, "rec"))] = os.path.join(out2, "rec")
                copy += ["--no-silence-search", "--no-replaygain", "--no-library"]
                running_set.append(("airtap HLS MPEG-TS, copy only", n, out2, [spawn(copy)]))
        out = scratch_dir(shm, "hlsff")
        ff = [spawn(["ffmpeg", "-nostdin", "-loglevel", "error", "-i", urls["HLS MPEG-TS"], "-t", str(secs), "-c", "copy",
                     "-f", "mp3", os.path.join(out, f"s{i}.mp3")]) for i in range(n_ffmpeg)]
        running_set.append(("ffmpeg -c copy HLS MPEG-TS", n_ffmpeg, out, ff))
        # Steady state: CPU between 15 s in (past the start's burst of three segments) and 2 s before the end.
        t0 = time.monotonic()
        w0, w1 = 15.0, secs - 2.0
        time.sleep(w0)
        cpu_a = [sum(proc_cpu(p.pid) for p in procs) for _, _, _, procs in running_set]
        time.sleep(max(0.0, t0 + w1 - time.monotonic()))
        cpu_b = [sum(proc_cpu(p.pid) for p in procs) for _, _, _, procs in running_set]
        for (name, count, out, procs), ca, cb in zip(running_set, cpu_a, cpu_b):
            codes, rss = [], 0.0
            for p in procs:
                rc, _, r = reap(p, timeout=secs + 60)
                codes.append(rc)
                rss += r
            got = dir_bytes(out)
            shutil.rmtree(out, ignore_errors=True)
            per_hour = (cb - ca) * 3600 / (w1 - w0) / count
            res["runs"][name] = {"stations": count, "steady_cpu_s": cb - ca, "cpu_s_per_station_audio_hour": per_hour,
                                 "sum_peak_rss_mb": rss, "bytes_written": got, "nonzero_exits": sum(1 for c in codes if c != 0)}
            log(f"hls {name}: {count} stations, {per_hour:.2f} CPU s per station-hour, rss={rss:.0f}MB "
                f"written={got} bad-exits={res['runs'][name]['nonzero_exits']}")
    finally:
        ts.stop()
        pk.stop()
    return res


# ---------------------------------------------------------------------------------------------
# Scenario 4: relay fan-out.

ICECAST_XML = """<icecast>
  <location>airtap bench</location><admin>bench@localhost</admin><hostname>127.0.0.1</hostname>
  <limits>
    <clients>{clients}</clients><sources>4</sources><queue-size>524288</queue-size>
    <client-timeout>30</client-timeout><header-timeout>15</header-timeout><source-timeout>10</source-timeout>
    <burst-size>{burst}</burst-size>
  </limits>
  <authentication>
    <source-password>bench-source</source-password><relay-password>bench-source</relay-password>
    <admin-user>admin</admin-user><admin-password>bench-admin</admin-password>
  </authentication>
  <listen-socket><port>{port}</port><bind-address>127.0.0.1</bind-address></listen-socket>
  <relay>
    <server>127.0.0.1</server><port>{up_port}</port><mount>/stream</mount>
    <local-mount>/relay</local-mount><on-demand>0</on-demand><relay-shoutcast-metadata>{metadata}</relay-shoutcast-metadata>
  </relay>
  <fileserve>0</fileserve>
  <paths>
    <basedir>/usr/share/icecast2</basedir><logdir>{logs}</logdir>
    <webroot>/usr/share/icecast2/web</webroot><adminroot>/usr/share/icecast2/admin</adminroot>
  </paths>
  <logging><accesslog>access.log</accesslog><errorlog>error.log</errorlog><loglevel>2</loglevel></logging>
  {security}
</icecast>
"""


def free_port():
    s = socket.socket()
    s.bind((HOST, 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http_ok(port, path, timeout=1.0):
    try:
        with socket.create_connection((HOST, port), timeout=timeout) as s:
            s.sendall(f"GET {path} HTTP/1.0\r\nHost: {HOST}\r\n\r\n".encode())
            head = s.recv(64)
            return b" 200 " in head
    except OSError:
        return False


def start_icecast(up_port, clients, work, burst=32000, metadata=False):
    port = free_port()
    logs = os.path.join(work, "log")
    os.makedirs(logs, exist_ok=True)
    security = ""
    if os.getuid() == 0:
        security = ("<security><chroot>0</chroot><changeowner><user>nobody</user><group>nogroup</group>"
                    "</changeowner></security>")
        os.chmod(work, 0o755)
        os.chmod(logs, 0o777)
    conf = os.path.join(work, "icecast.xml")
    with open(conf, "w") as f:
        f.write(ICECAST_XML.format(clients=clients, port=port, up_port=up_port, logs=logs, security=security,
                                   burst=burst, metadata=int(metadata)))
    p = spawn(["icecast2", "-c", conf], cwd=work)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if not running(p):
            reap(p, timeout=0)
            raise RuntimeError(f"icecast2 exited with {p.returncode}; see {logs}")
        if http_ok(port, "/relay"):
            return p, port, "/relay"
        time.sleep(0.2)
    reap(p, timeout=0)
    raise RuntimeError("icecast2's relay mount did not come up in 30 s")


def wait_for_burst(port, path, burst, timeout=60.0):
    """Waits until a new listener of the mount gets its whole burst at once, as on a server that
    has been up a while: right after icecast2 starts its relay it holds only what came since."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = 0
        try:
            with socket.create_connection((HOST, port), timeout=1.0) as s:
                s.sendall(f"GET {path} HTTP/1.0\r\nHost: {HOST}\r\n\r\n".encode())
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                got = len(data.split(b"\r\n\r\n", 1)[-1])
                # What arrives within 0.3 s: the burst, and 0.3 s of the live stream.
                until = time.monotonic() + 0.3
                while got < burst and time.monotonic() < until:
                    s.settimeout(max(0.01, until - time.monotonic()))
                    try:
                        chunk = s.recv(65536)
                    except socket.timeout:
                        break
                    if not chunk:
                        break
                    got += len(chunk)
        except OSError:
            pass
        if got >= burst:
            return
        time.sleep(0.5)
    raise RuntimeError(f"icecast2 did not hold a {burst}-byte burst within {timeout:.0f} s")


def start_airtap_serve(bins, up_url, clients):
    p = spawn([f"{bins}/airtap", "serve", up_url, "--listen", f"{HOST}:0", "--max-listeners", str(clients)],
              stdout=subprocess.PIPE)
    port = read_listening(p, "airtap serve")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if http_ok(port, "/stream"):
            return p, port, "/stream"
        time.sleep(0.2)
    raise RuntimeError("airtap serve did not answer in 30 s")


def listeners_main(args):
    """Child process: L listeners; prints JSON with each listener's bytes in the measured window."""
    raise_nofile()
    port, path, count, settle, window = int(args[0]), args[1], int(args[2]), float(args[3]), float(args[4])
    sel = selectors.DefaultSelector()
    socks = []
    req = f"GET {path} HTTP/1.0\r\nHost: {HOST}\r\nUser-Agent: airtap-bench\r\n\r\n".encode()
    for i in range(count):
        s = socket.create_connection((HOST, port), timeout=10)
        s.sendall(req)
        s.setblocking(False)
        socks.append(s)
        sel.register(s, selectors.EVENT_READ, i)
        if i % 100 == 99:
            # Drain while connecting so early listeners are not starved by the connect loop.
            for key, _ in sel.select(timeout=0):
                try:
                    key.fileobj.recv(1 << 16)
                except BlockingIOError:
                    pass
    got = [0] * count
    closed = [False] * count
    counting = False
    t_conn = time.monotonic()
    start = t_conn + settle
    end = start + window
    print(json.dumps({"connected": True}), flush=True)
    while True:
        now = time.monotonic()
        if now >= end:
            break
        if not counting and now >= start:
            counting = True
            print(json.dumps({"window_start": True}), flush=True)
        for key, _ in sel.select(timeout=0.05):
            i = key.data
            try:
                data = key.fileobj.recv(1 << 17)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                sel.unregister(key.fileobj)
                closed[i] = True
                continue
            if counting:
                got[i] += len(data)
        time.sleep(0.1)  # batch the reads: ~10 recv per listener per second
    for s in socks:
        s.close()
    print(json.dumps({"bytes": got, "closed": sum(closed)}), flush=True)


def scenario_relay(cfg, bins, shm):
    window = cfg["relay_seconds"]
    settle = 3.0
    res = {"window_seconds": window, "runs": []}
    st = Station(bins, "--realtime", "--track-seconds", "30", "--bitrate", "128")
    try:
        for l in cfg["relay_l"]:
            for tool in ("airtap serve", "icecast2"):
                work = scratch_dir(shm, "relay")
                if tool == "icecast2":
                    srv, port, path = start_icecast(st.port, l + 50, work)
                else:
                    srv, port, path = start_airtap_serve(bins, st.url, l + 50)
                time.sleep(1.0)
                lp = spawn([sys.executable, os.path.abspath(__file__), "--listeners", str(port), path, str(l),
                            str(settle), str(window)], stdout=subprocess.PIPE)
                line = lp.stdout.readline()  # connected
                line = lp.stdout.readline()  # window start
                cpu0 = proc_cpu(srv.pid)
                t0 = time.monotonic()
                out = lp.stdout.read()
                cpu1 = proc_cpu(srv.pid)
                t1 = time.monotonic()
                rss = proc_status(srv.pid, "VmRSS")
                hwm = proc_status(srv.pid, "VmHWM")
                reap(lp, timeout=10)
                os.kill(srv.pid, signal.SIGTERM)
                rc, total_cpu, peak = reap(srv, timeout=10)
                shutil.rmtree(work, ignore_errors=True)
                data = json.loads(out.strip().splitlines()[-1])
                got = data["bytes"]
                expected = 16000 * window
                ok = sum(1 for b in got if b >= 0.95 * expected)
                cpu = cpu1 - cpu0
                run = {"tool": tool, "listeners": l, "window_cpu_s": cpu, "window_wall_s": t1 - t0,
                       "listener_seconds_per_cpu_s": (l * window / cpu) if cpu > 0 else None,
                       "rss_mb_end": rss, "peak_rss_mb": hwm if hwm else peak, "total_cpu_s": total_cpu,
                       "listeners_ge_95pct": ok, "min_bytes_fraction": min(got) / expected,
                       "median_bytes_fraction": statistics.median(got) / expected, "closed": data["closed"]}
                res["runs"].append(run)
                log(f"relay L={l} {tool}: cpu={cpu:.2f}s over {window}s rss={rss:.1f}MB "
                    f">=95%: {ok}/{l} min={run['min_bytes_fraction']:.2f}")
    finally:
        st.stop()
    return res


# ---------------------------------------------------------------------------------------------
# Scenario 5: parse throughput (airtap-bench, in memory).

def scenario_parse(cfg, bins, shm):
    out = scratch_dir(shm, "parse")
    try:
        p = spawn([f"{bins}/airtap-bench", "--megabytes", str(cfg["parse_mb"]), "--repeats", str(cfg["parse_repeats"]),
                   "--record-dir", out], stdout=subprocess.PIPE)
        text = p.stdout.read()
        rc, cpu, rss = reap(p)
        if rc != 0:
            raise RuntimeError(f"airtap-bench exited {rc}")
        res = json.loads(text)
        res["process_cpu_s"] = cpu
        res["peak_rss_mb"] = rss
        log(f"parse: {res['parse_gb_per_s']:.2f} GB/s; record path {res.get('record_gb_per_s', 0):.2f} GB/s, "
            f"with ReplayGain {res.get('record_replaygain_gb_per_s', 0):.2f} GB/s")
        return res
    finally:
        shutil.rmtree(out, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Scenario 6: playback.

PLAY_WARMUP = 5


def build_shim(shm):
    so = os.path.join(shm, "first_audio.so")
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", so, os.path.join(ROOT, "tools/bench/first_audio.c"), "-ldl"],
                   check=True)
    return so


def scenario_play(cfg, bins, shm):
    secs = cfg["play_seconds"]
    so = build_shim(shm)
    res = {"seconds": secs, "airtap": [], "mpg123": []}
    st = Station(bins, "--realtime", "--track-seconds", "30")
    try:
        for rnd in range(cfg["pairs"]):
            for tool in ("airtap", "mpg123"):
                mark = os.path.join(shm, f"first-{tool}-{rnd}")
                env = dict(os.environ, LD_PRELOAD=so, BENCH_FIRST_AUDIO_FILE=mark)
                if tool == "airtap":
                    cmd = [f"{bins}/airtap", "play", st.url, "--device", "null", "--buffer", "0.25s"]
                else:
                    cmd = ["mpg123", "-q", "-o", "alsa", "-a", "null", st.url]
                # airtap's log (info off a terminal) ends with its underrun count; mpg123 plays into
                # a device with no clock (null), where it cannot run dry, so it has none to count.
                err_path = os.path.join(shm, f"play-{tool}-{rnd}.err")
                with open(err_path, "w") as err:
                    t0 = time.monotonic()
                    p = spawn(cmd, env=env, stderr=err)
                    # Steady state: the CPU from the 5th second on, past start-up and the first buffer.
                    time.sleep(PLAY_WARMUP)
                    warm = proc_cpu(p.pid) if running(p) else None
                    t_warm = time.monotonic()
                    rc, cpu, rss = reap(p, timeout=secs - PLAY_WARMUP, sig=signal.SIGTERM)
                    t_end = time.monotonic()
                steady = (cpu - warm) * 60 / (t_end - t_warm) if warm is not None else None
                underruns = None
                if tool == "airtap":
                    with open(err_path) as f:
                        counts = re.findall(r"underruns=(\d+)", f.read())
                    underruns = int(counts[-1]) if counts else None
                os.unlink(err_path)
                first = None
                if os.path.exists(mark):
                    with open(mark) as f:
                        first = float(f.read()) - t0
                    os.unlink(mark)
                res[tool].append({"exit": rc, "cpu_s": cpu, "cpu_s_per_minute": cpu * 60 / secs,
                                  "steady_cpu_s_per_minute": steady, "underruns": underruns,
                                  "first_audio_ms": first * 1000 if first is not None else None, "peak_rss_mb": rss})
                log(f"play {tool}: exit {rc} first audio {first and first * 1000:.0f} ms cpu={cpu:.3f}s "
                    f"steady={steady and round(steady, 4)} s/min underruns={underruns} rss={rss:.1f}MB")
    finally:
        st.stop()
    return res


PLAY_ICECAST_WARMUP = 10


def scenario_play_icecast(cfg, bins, shm):
    """Playback as a listener meets most stations: through icecast2, which relays the real-time
    station (titles included) and sends each new listener its burst (icecast2's default, 64 KB:
    4 s at 128 kbps), with songs of three minutes. `airtap play` with its default options and
    mpg123 run side by side on the mount; CPU from the 10th second on, over one song's length,
    so each window holds one title change."""
    secs = cfg["play_icecast_seconds"]
    res = {"seconds": secs, "airtap": [], "mpg123": []}
    st = Station(bins, "--realtime", "--track-seconds", "180")
    work = scratch_dir(shm, "play-icecast")
    srv = None
    live = []  # started and not yet reaped: stopped if the scenario fails
    try:
        srv, port, path = start_icecast(st.port, 20, work, burst=65536, metadata=True)
        wait_for_burst(port, path, 65536)
        url = f"http://{HOST}:{port}{path}"
        for rnd in range(cfg["pairs"]):
            err_path = os.path.join(shm, f"play-icecast-{rnd}.err")
            with open(err_path, "w") as err:
                procs = {"airtap": spawn([f"{bins}/airtap", "play", url, "--device", "null"], stderr=err),
                         "mpg123": spawn(["mpg123", "-q", "-o", "alsa", "-a", "null", url])}
                live = list(procs.values())
                time.sleep(PLAY_ICECAST_WARMUP)
                # Whole-process CPU: the pool threads that come and go within the window count.
                warm = {tool: proc_cpu_all(p.pid) if running(p) else None for tool, p in procs.items()}
                t_warm = time.monotonic()
                time.sleep(secs)
                steady = {tool: proc_cpu_all(p.pid) if running(p) else None for tool, p in procs.items()}
                t_end = time.monotonic()
                exits = {tool: reap(p, timeout=0, sig=signal.SIGTERM)[0] for tool, p in procs.items()}
                live = []
            with open(err_path) as f:
                counts = re.findall(r"underruns=(\d+)", f.read())
            os.unlink(err_path)
            for tool in procs:
                per_minute = None
                if warm[tool] is not None and steady[tool] is not None:
                    per_minute = (steady[tool] - warm[tool]) * 60 / (t_end - t_warm)
                res[tool].append({"exit": exits[tool], "steady_cpu_s_per_minute": per_minute,
                                  "underruns": (int(counts[-1]) if counts else None) if tool == "airtap" else None})
            log(f"play via icecast2: airtap {res['airtap'][-1]} mpg123 {res['mpg123'][-1]}")
    finally:
        for p in live:
            reap(p, timeout=0, sig=signal.SIGTERM)
        if srv is not None:
            os.kill(srv.pid, signal.SIGTERM)
            reap(srv, timeout=5)
        st.stop()
        shutil.rmtree(work, ignore_errors=True)
    return res


def scenario_play_aac(cfg, bins, shm):
    """AAC playback CPU: airtap (FAAD2) against mpv (FFmpeg's decoder) on the same AAC LC station."""
    secs = cfg["play_seconds"]
    so = build_shim(shm)
    res = {"seconds": secs, "airtap": [], "mpv": []}
    st = Station(bins, "--realtime", "--track-seconds", "30", "--codec", "aac", "--bitrate", "96")
    try:
        for rnd in range(cfg["pairs"]):
            for tool in ("airtap", "mpv"):
                mark = os.path.join(shm, f"first-aac-{tool}-{rnd}")
                env = dict(os.environ, LD_PRELOAD=so, BENCH_FIRST_AUDIO_FILE=mark)
                if tool == "airtap":
                    cmd = [f"{bins}/airtap", "play", st.url, "--device", "null", "--buffer", "0.25s"]
                else:
                    cmd = ["mpv", "--no-config", "--no-video", "--really-quiet", "--ao=alsa", "--audio-device=alsa/null", st.url]
                t0 = time.monotonic()
                p = spawn(cmd, env=env)
                rc, cpu, rss = reap(p, timeout=secs, sig=signal.SIGTERM)
                first = None
                if os.path.exists(mark):
                    with open(mark) as f:
                        first = float(f.read()) - t0
                    os.unlink(mark)
                res[tool].append({"exit": rc, "cpu_s": cpu, "cpu_s_per_minute": cpu * 60 / secs,
                                  "first_audio_ms": first * 1000 if first is not None else None, "peak_rss_mb": rss})
                log(f"play aac {tool}: exit {rc} first audio {first and first * 1000:.0f} ms cpu={cpu:.3f}s rss={rss:.1f}MB")
    finally:
        st.stop()
    return res


# ---------------------------------------------------------------------------------------------
# Report.

def fmt(x, digits=2):
    if x is None:
        return "n/a"
    if isinstance(x, float):
        if abs(x) >= 100:
            return f"{x:.0f}"
        return f"{x:.{digits}f}"
    return str(x)


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def build_table(cfg, R):
    rows = []  # (scenario, metric, airtap, peer name, peer, ratio, target, met)

    def row(scn, metric, a, peer_name, b, target="", met=None, digits=2):
        r = ratio(a, b)
        rows.append((scn, metric, fmt(a, digits), peer_name, fmt(b, digits), f"{r:.3f}" if r is not None else "",
                     target, "" if met is None else ("met" if met else "**missed**")))

    if "hls" in R:
        runs = R["hls"]["runs"]
        per = lambda name: (runs.get(name) or {}).get("cpu_s_per_station_audio_hour")
        icy = per("airtap ICY")
        for name in ("airtap HLS packed audio", "airtap HLS MPEG-TS"):
            a = per(name)
            row(f"8 HLS, {R['hls']['n']} stations", f"CPU s / station-hour, {name[7:]} vs ICY", a, "airtap ICY", icy,
                "≤ 2× ICY", a is not None and icy is not None and a <= 2 * icy)
        copy, peer = per("airtap HLS MPEG-TS, copy only"), per("ffmpeg -c copy HLS MPEG-TS")
        row(f"8 HLS, {R['hls']['n']} stations", "CPU s / station-hour, HLS MPEG-TS with --no-silence-search --no-replaygain --no-library",
            copy, "ffmpeg -c copy", peer, "below it", copy is not None and peer is not None and copy < peer)
    if "rip" in R:
        f = R["rip"]["fast"]
        m = lambda name, key, d=f: median([x[key] for x in d.get(name, [])])
        a, b = m("airtap", "cpu_s_per_audio_hour"), m("streamripper", "cpu_s_per_audio_hour")
        row("1 rip, fast", "CPU s / audio hour (silence search on)", a, "streamripper", b, "≤ 0.5", a is not None and a <= 0.5)
        a2, b2 = m("airtap --no-silence-search", "cpu_s_per_audio_hour"), m("streamripper --xs-none", "cpu_s_per_audio_hour")
        row("1 rip, fast", "CPU s / audio hour (silence search off)", a2, "streamripper --xs-none", b2, "≤ 0.5",
            a2 is not None and a2 <= 0.5)
        a5 = m("airtap --library", "cpu_s_per_audio_hour")
        row("1 rip, fast", "CPU s / audio hour, the library on (--library: ReplayGain, fingerprints, index)", a5, "streamripper", b,
            "", None)
        a3, b3 = m("airtap", "peak_rss_mb"), m("streamripper", "peak_rss_mb")
        row("1 rip, fast", "peak RSS MB", a3, "streamripper", b3, "≤ 30", a3 is not None and a3 <= 30, 1)
        a4, b4 = m("airtap --no-silence-search", "wall_s"), m("streamripper --xs-none", "wall_s")
        row("1 rip, fast", "wall-clock s (silence search off)", a4, "streamripper --xs-none", b4, "", None, 1)
        rt = R["rip"]["realtime"]
        a, b = m("airtap", "steady_cpu_s_per_audio_hour", rt), m("streamripper", "steady_cpu_s_per_audio_hour", rt)
        row("1 rip, real time", "CPU s / audio hour, steady state extrapolated (silence on)", a, "streamripper", b, "≤ 1",
            a is not None and a <= 1)
        a, b = m("airtap", "cpu_s_per_audio_hour", rt), m("streamripper", "cpu_s_per_audio_hour", rt)
        row("1 rip, real time", "CPU s / audio hour, whole process incl. start-up, extrapolated (silence on)", a,
            "streamripper", b, "", None)
        a, b = m("airtap --no-silence-search", "steady_cpu_s_per_audio_hour", rt), m("streamripper --xs-none", "steady_cpu_s_per_audio_hour", rt)
        row("1 rip, real time", "CPU s / audio hour, steady state extrapolated (silence off)", a, "streamripper --xs-none", b, "≤ 1",
            a is not None and a <= 1)
        a, b = m("airtap --library", "steady_cpu_s_per_audio_hour", rt), m("streamripper", "steady_cpu_s_per_audio_hour", rt)
        row("1 rip, real time", "CPU s / audio hour, steady state extrapolated, the library on (--library)", a, "streamripper", b,
            "", None)
        a, b = m("airtap", "peak_rss_mb", rt), m("streamripper", "peak_rss_mb", rt)
        row("1 rip, real time", "peak RSS MB", a, "streamripper", b, "≤ 30", a is not None and a <= 30, 1)
    if "long" in R:
        L = R["long"]
        at = dict(L["rss_mb_at_hour"])
        # The last mark falls on the very end of the stream: take the last sample from 97 % of it on.
        last = L["samples"][-1] if L.get("samples") else None
        if last and str(int(L["hours"])) not in at and last[0] >= 0.97 * L["hours"]:
            at[str(int(L["hours"]))] = last[1]
        vals = [at.get(k) for k in ("1", "2", "4") if at.get(k) is not None]
        flat = len(vals) >= 2 and max(vals) - min(vals) <= 2.0
        for k in ("1", "2", "4"):
            row("2 long rip", f"RSS MB at {k} h", at.get(k), "", None, "flat (±2 MB), ≤ 30",
                None if at.get(k) is None else (flat and at[k] <= 30), 1)
    if "many" in R:
        runs = R["many"]["runs"]
        for n in cfg["many_n"]:
            a = next((r for r in runs if r["n"] == n and r["tool"] == "airtap"), None)
            b = next((r for r in runs if r["n"] == n and r["tool"] == "streamripper"), None)
            t500 = n == 500
            row("3 many stations", f"N={n}: CPU, % of one core", a and 100 * a["cpu_core_fraction"],
                "N × streamripper", b and 100 * b["cpu_core_fraction"], "< 50 %" if t500 else "",
                (a is not None and a["cpu_core_fraction"] < 0.5) if t500 else None, 1)
            row("3 many stations", f"N={n}: RSS MB, summed over processes (sampled, 2nd half)",
                a and a["sum_rss_mb_sampled"], "N × streamripper", b and b["sum_rss_mb_sampled"],
                "< 300" if t500 else "", (a is not None and a["sum_rss_mb_sampled"] < 300) if t500 else None, 0)
            row("3 many stations", f"N={n}: files' bytes / bytes sent", a and a["bytes_fraction"],
                "N × streamripper", b and b["bytes_fraction"], "", None, 2)
        for n in cfg["many_fleet_n"]:
            f = next((r for r in runs if r["n"] == n and r["tool"] == "airtap fleet"), None)
            big = n >= 5000
            row("3 many stations", f"N={n}, `--no-silence-search`: CPU from 40 to 90 % of the run, % of one core",
                f and 100 * f["steady_core_fraction"], "", None, "< 100 %" if big else "",
                (f is not None and f["steady_core_fraction"] < 1.0) if big else None, 1)
            row("3 many stations", f"N={n}, `--no-silence-search`: RSS MB (sampled)",
                f and f["rss_mb_sampled"], "", None, "< 1000" if big else "",
                (f is not None and f["rss_mb_sampled"] < 1000) if big else None, 0)
            # The process's own few (standard streams, the loop's, the log, the locks) besides two a station.
            row("3 many stations", f"N={n}, `--no-silence-search`: open descriptors (sampled)",
                f and f["descriptors"], "", None, "≤ 2 a station (+ 32)" if big else "",
                (f is not None and f["descriptors"] is not None and f["descriptors"] <= 2 * n + 32) if big else None, 0)
            row("3 many stations", f"N={n}, `--no-silence-search`: files' bytes / bytes sent",
                f and f["bytes_fraction"], "", None, "", None, 2)
    if "relay" in R:
        runs = R["relay"]["runs"]
        for l in cfg["relay_l"]:
            a = next((r for r in runs if r["listeners"] == l and r["tool"] == "airtap serve"), None)
            b = next((r for r in runs if r["listeners"] == l and r["tool"] == "icecast2"), None)
            ra = ratio(a and a["listener_seconds_per_cpu_s"], b and b["listener_seconds_per_cpu_s"])
            row("4 relay", f"L={l}: listener-seconds per CPU second", a and a["listener_seconds_per_cpu_s"], "icecast2",
                b and b["listener_seconds_per_cpu_s"], "ratio ≥ 1.5", ra is not None and ra >= 1.5, 0)
            row("4 relay", f"L={l}: RSS MB at end", a and a["rss_mb_end"], "icecast2", b and b["rss_mb_end"], "bounded", None, 1)
            row("4 relay", f"L={l}: listeners with ≥ 95 % of bytes", a and a["listeners_ge_95pct"], "icecast2",
                b and b["listeners_ge_95pct"], f"{l}", (a is not None and a["listeners_ge_95pct"] == l), 0)
    if "parse" in R:
        P = R["parse"]
        row("5 parse", "ingest pipeline (demux, framing, titles), GB/s (one core)", P["parse_gb_per_s"], "", None, "≥ 1", P["parse_gb_per_s"] >= 1)
        if "record_gb_per_s" in P:
            row("5 parse", "whole record path (--no-silence-search --no-replaygain) to /dev/shm, GB/s", P["record_gb_per_s"], "", None, "", None)
        if "record_replaygain_gb_per_s" in P:
            row("5 parse", "whole record path with ReplayGain (--no-silence-search), GB/s", P["record_replaygain_gb_per_s"], "", None, "", None)
            row("5 parse", "CPU s / audio hour of the record path: with ReplayGain / without",
                P["record_replaygain_cpu_s_per_audio_hour"], "", P["record_cpu_s_per_audio_hour"], "", None)
    if "play" in R:
        P = R["play"]
        a, b = median([x["first_audio_ms"] for x in P["airtap"]]), median([x["first_audio_ms"] for x in P["mpg123"]])
        row("6 playback", "first audio, ms (--buffer 0.25s)", a, "mpg123", b, "≤ 300", a is not None and a <= 300, 0)
        a, b = median([x["cpu_s_per_minute"] for x in P["airtap"]]), median([x["cpu_s_per_minute"] for x in P["mpg123"]])
        row("6 playback", "CPU s per minute of playback", a, "mpg123", b, "≤ mpg123", a is not None and b is not None and a <= b, 3)
        sa = [x.get("steady_cpu_s_per_minute") for x in P["airtap"]]
        sb = [x.get("steady_cpu_s_per_minute") for x in P["mpg123"]]
        a, b = median([x for x in sa if x is not None]), median([x for x in sb if x is not None])
        row("6 playback", "CPU s per minute, steady state (from the 5th second)", a, "mpg123", b, "", None, 3)
        u = [x.get("underruns") for x in P["airtap"]]
        if u and all(x is not None for x in u):
            row("6 playback", f"underruns, total of {len(u)} runs (mpg123 on null cannot run dry)", sum(u), "", None, "0",
                sum(u) == 0, 0)
        a, b = median([x["peak_rss_mb"] for x in P["airtap"]]), median([x["peak_rss_mb"] for x in P["mpg123"]])
        row("6 playback", "peak RSS MB", a, "mpg123", b, "", None, 1)
    if "play_icecast" in R:
        P = R["play_icecast"]
        a = median([x["steady_cpu_s_per_minute"] for x in P["airtap"] if x["steady_cpu_s_per_minute"] is not None])
        b = median([x["steady_cpu_s_per_minute"] for x in P["mpg123"] if x["steady_cpu_s_per_minute"] is not None])
        row("6 playback", "through icecast2 (64 KB burst, 3-minute songs), default options: CPU s per minute from the 10th second",
            a, "mpg123", b, "≤ mpg123", a is not None and b is not None and a <= b, 3)
        u = [x.get("underruns") for x in P["airtap"]]
        if u and all(x is not None for x in u):
            row("6 playback", f"through icecast2: underruns, total of {len(u)} runs", sum(u), "", None, "0", sum(u) == 0, 0)
    if "play_aac" in R:
        P = R["play_aac"]
        a, b = median([x["cpu_s_per_minute"] for x in P["airtap"]]), median([x["cpu_s_per_minute"] for x in P["mpv"]])
        row("7 AAC playback", "CPU s per minute of playback", a, "mpv", b, "≤ mpv", a is not None and b is not None and a <= b, 3)
        a, b = median([x["peak_rss_mb"] for x in P["airtap"]]), median([x["peak_rss_mb"] for x in P["mpv"]])
        row("7 AAC playback", "peak RSS MB", a, "mpv", b, "", None, 1)
    return rows


def write_results(cfg, R, wall, path_md, path_json, when=None):
    rows = build_table(cfg, R)
    when = when or time.strftime('%Y-%m-%d %H:%M %Z')
    with open(path_json, "w") as f:
        json.dump({"config": cfg, "wall_seconds": wall, "written": when, "machine": machine(), "results": R}, f,
                  indent=1)
    lines = [
        "# airtap benchmarks",
        "",
        f"Written by `make bench` (tools/bench/bench.py) on {when}; "
        f"the driver took {wall / 60:.1f} minutes. Raw numbers: `bench/results.json`.",
        "",
        f"Machine: {machine()['summary']}. Everything on 127.0.0.1 against `airtap-teststation` "
        "(128 kbps CBR MP3 from LAME, ICY metadata every 16000 bytes). airtap is the release build.",
        "",
        "Ratios are airtap / peer: below 1 is better for airtap on CPU and memory, above 1 on throughput "
        "(listener-seconds per CPU second).",
        "",
        "| scenario | metric | airtap | peer | peer value | ratio | target | |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append("| " + " | ".join(r) + " |")
    lines += ["", "## What was run", ""] + describe(cfg) + [""]
    with open(path_md, "w") as f:
        f.write("\n".join(lines))


def machine():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"cpu": cpu, "cores": os.cpu_count(), "mem_gb": round(mem, 1), "kernel": platform.release(),
            "summary": f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GB RAM, Linux {platform.release()}"}


def describe(cfg):
    p = cfg["pairs"]
    return [
        f"1. **Rip cost.** Fast: one station serving {cfg['rip_fast_hours']} h of audio (`--fast --max-seconds "
        f"{int(cfg['rip_fast_hours'] * 3600)}`, 180 s tracks with 1 s gaps), recorded per track into /dev/shm; "
        f"{p} rounds, each running, one after another, `airtap record URL --out DIR --retries 0`, "
        "`streamripper URL -d DIR -s -c --quiet`, `airtap ... --no-silence-search` and `streamripper ... --xs-none` "
        "(A B A B). Values are medians of the rounds; CPU is user + system from wait4() over the whole process. "
        f"Real time: the same four, {p} copies of each, all at once for {cfg['rip_rt_seconds']} s "
        f"(`--realtime --max-seconds {cfg['rip_rt_seconds']}`, 20 s tracks), CPU extrapolated to an audio hour "
        "two ways: the steady state (CPU of all threads from /proc/PID/task/*/schedstat, nanoseconds, between 10 s in and "
        "2 s before the end) and the whole process with start-up (wait4).",
        f"2. **Long rip memory.** airtap alone, {cfg['long_hours']} h of audio served fast, per track; VmRSS sampled "
        "every 10 ms and placed in audio time by the bytes the process has written (/proc/PID/io wchar). One run. "
        "(streamripper's peak RSS for the same kind of run is in row 1.)",
        f"3. **Many stations.** N = {', '.join(map(str, cfg['many_n']))} connections to one real-time station for "
        f"{cfg['many_seconds']} s (`--max-seconds {cfg['many_seconds']}`, 10 s tracks), all recorded per track: "
        "one `airtap record s0 … sN-1 --stations FILE` against N `streamripper` processes"
        + (f" (streamripper only up to N = {cfg['many_sr_max']})" if cfg['many_sr_max'] < max(cfg['many_n']) else "")
        + ". CPU (wait4) summed over the processes; RSS is the largest sum of VmRSS sampled every 0.5 s in the second "
        "half of the run (the sum of each process's own peak is in the JSON: it counts streamripper's shared "
        "libraries N times over). Bytes written include `incomplete/`; streamripper keeps less because it drops "
        "the partial track at the end of a connection. One run per N and tool, not pairs, to fit the time budget. "
        f"Then N = {', '.join(map(str, cfg['many_fleet_n']))} in one airtap with a fleet's settings "
        "(`--no-silence-search`, `--for` the same time), alone: CPU from the process's clock between 40 % and 90 % "
        "of the run (past everyone's connecting), RSS and open descriptors sampled every second in that window; "
        "the test station serves them all (its and the driver's descriptor limit raised to the hard one).",
        f"4. **Relay fan-out.** L = {', '.join(map(str, cfg['relay_l']))} listeners (one Python epoll process, "
        "reading every 100 ms) on `airtap serve URL --listen 127.0.0.1:0 --max-listeners L+50` and on a private "
        "`icecast2` with a `<relay>` of the same real-time station (`<on-demand>0`, burst 32000 bytes). After all "
        f"listeners connected and 3 s settled, the server's CPU (/proc/PID/task/*/schedstat) is measured over {cfg['relay_seconds']} s, "
        f"and every listener must get ≥ 95 % of 16000 B/s × {cfg['relay_seconds']} s in that window. Metric: "
        "listener-seconds served per CPU second. One run per L and tool.",
        f"5. **Parse throughput.** `airtap-bench --megabytes {cfg['parse_mb']} --repeats {cfg['parse_repeats']}`: "
        "an in-memory ICY stream (the test station's LAME program, metadata every 16000 bytes) pushed in 16 KiB "
        "reads through IngestPipeline (the ICY demuxer, the framer, titles in order: what every session runs); "
        "and the same feeding the StationRecorder `record --no-silence-search` builds (its queue, then tagged "
        "files per track, into /dev/shm). Median of the repeats, one core.",
        f"6. **Playback.** `airtap play URL --device null --buffer 0.25s` vs `mpg123 -q -o alsa -a null URL`, both "
        f"into ALSA's null PCM, {p} pairs (A B A B) of {cfg['play_seconds']} s each against a real-time station "
        "(each client joins at the live position). First audio: from spawning the process to its first snd_pcm_write*() call, seen by an "
        "LD_PRELOAD shim (tools/bench/first_audio.c) used for both. CPU per minute extrapolated from the run, and from "
        "its 5th second on (steady state, past start-up). Underruns: airtap's own count, the last line of its log; "
        "mpg123 plays into a null device with no clock, so it cannot run dry and has none to count. "
        "The test station sends no burst, so a player there never has more than its buffer ahead. "
        f"Through icecast2: icecast2 relays the station with songs of 3 minutes, titles included, and sends each new "
        f"listener its default 64 KB burst, as most stations' servers do (the rounds start once a new listener gets "
        f"all of it, as from a server up a while); `airtap play URL --device null` (default "
        f"options) and mpg123 play the mount side by side, {p} rounds, CPU from the 10th second for "
        f"{cfg['play_icecast_seconds']} s (a full run's 180 s is one song, so one title change), whole-process CPU "
        "from the process's CPU-time clock (clock_getcpuclockid, nanoseconds; pool threads that exit within the "
        "window count).",
        f"7. **AAC playback.** The same against an AAC LC station (the test station's `--codec aac --bitrate 96`, "
        f"ffmpeg's encoder): `airtap play` (FAAD2) vs `mpv --no-video --ao=alsa --audio-device=alsa/null URL` "
        f"(FFmpeg's decoder), {p} pairs of {cfg['play_seconds']} s each.",
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", default=os.environ.get("AIRTAP_BIN_DIR", os.path.join(ROOT, ".build/release")))
    ap.add_argument("--only", default="1,2,3,4,5,6,7,8")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, to check the driver itself")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench"))
    ap.add_argument("--listeners", nargs=5, help=argparse.SUPPRESS)
    ap.add_argument("--report-only", metavar="JSON", help="rewrite results.md from an earlier run's JSON")
    a = ap.parse_args()
    if a.listeners:
        listeners_main(a.listeners)
        return
    if a.report_only:
        with open(a.report_only) as f:
            old = json.load(f)
        write_results(old["config"], old["results"], old["wall_seconds"], os.path.join(a.out, "results.md"),
                      os.path.join(a.out, "results.json"), when=old.get("written"))
        return
    cfg = {
        "pairs": 3,
        "rip_fast_hours": 1.0, "rip_rt_seconds": 60,
        "long_hours": 4.0,
        "many_n": [1, 50, 200, 500, 1000], "many_sr_max": 500, "many_seconds": 90, "many_fleet_n": [2000, 5000],
        "relay_l": [100, 500, 1000, 2000], "relay_seconds": 15,
        "parse_mb": 256, "parse_repeats": 5,
        "play_seconds": 15, "play_icecast_seconds": 180,
        "hls_seconds": 60, "hls_n": 50, "hls_ffmpeg_n": 10,
    }
    if a.quick:
        cfg.update({"pairs": 1, "rip_fast_hours": 0.05, "rip_rt_seconds": 10, "long_hours": 0.1,
                    "many_n": [1, 5], "many_seconds": 10, "many_fleet_n": [20], "relay_l": [10, 50], "relay_seconds": 5,
                    "parse_mb": 16, "parse_repeats": 2, "play_seconds": 5, "play_icecast_seconds": 10,
                    "hls_seconds": 20, "hls_n": 3, "hls_ffmpeg_n": 2})
    only = set(a.only.split(","))
    raise_nofile()
    os.makedirs(a.out, exist_ok=True)
    shm_base = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    shm = tempfile.mkdtemp(prefix="airtap-bench-", dir=shm_base)
    os.chmod(shm, 0o755)
    # Every recording joins the library index by default: a scratch one per run, so a run
    # starts from an empty index and never fills the user's own.
    os.environ["XDG_DATA_HOME"] = os.path.join(shm, "xdg-data")
    bins = a.bin_dir
    for exe in ("airtap", "airtap-teststation", "airtap-bench"):
        if not os.access(os.path.join(bins, exe), os.X_OK):
            sys.exit(f"bench: {bins}/{exe} missing; build with `swift build -c release` first")
    for tool in ("streamripper", "icecast2", "mpg123", "mpv", "ffmpeg", "cc"):
        if shutil.which(tool) is None:
            sys.exit(f"bench: {tool} is not installed (tools/install-deps bench)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    R = {}
    t0 = time.monotonic()
    scenarios = [("1", "rip", scenario_rip), ("2", "long", scenario_long), ("3", "many", scenario_many),
                 ("4", "relay", scenario_relay), ("5", "parse", scenario_parse), ("6", "play", scenario_play),
                 ("6", "play_icecast", scenario_play_icecast),
                 ("7", "play_aac", scenario_play_aac), ("8", "hls", scenario_hls)]
    try:
        for num, key, fn in scenarios:
            if num not in only:
                continue
            log(f"scenario {num}: {key}")
            ts = time.monotonic()
            try:
                R[key] = fn(cfg, bins, shm)
            except Exception as e:  # one broken scenario must not lose the others
                log(f"scenario {num} failed: {e!r}")
                R[key + "_error"] = repr(e)
            log(f"scenario {num} took {time.monotonic() - ts:.0f} s")
    finally:
        stop_all()
        shutil.rmtree(shm, ignore_errors=True)
    wall = time.monotonic() - t0
    suffix = "-quick" if a.quick else ""
    write_results(cfg, R, wall, os.path.join(a.out, f"results{suffix}.md"), os.path.join(a.out, f"results{suffix}.json"))
    log(f"done in {wall / 60:.1f} min: {a.out}/results{suffix}.md")


if __name__ == "__main__":
    main()
