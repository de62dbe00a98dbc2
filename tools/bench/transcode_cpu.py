#!/usr/bin/env python3
"""CPU of `airtap serve --transcode mp3:128k` against ffmpeg's libmp3lame doing the same.

One airtap-teststation on 127.0.0.1 serves a real-time 128k AAC station as ICY (and as HLS,
packed audio, 2 s segments, with --source hls). Side by side, at the same time, against the same station:
  - airtap serve URL --transcode mp3:128k, one listener reading the MP3
  - airtap serve URL (no transcode), one listener: what relaying alone costs
  - ffmpeg -i URL -c:a libmp3lame -b:a 128k -f mp3 - > /dev/null
CPU (user + system, the process and all its threads) from /proc/PID/stat over a window that
starts after a warm-up. Prints one table row per process, as % of one core.

  tools/bench/transcode_cpu.py --bin-dir .build/release [--seconds 120] [--source icy|hls]
"""
import argparse
import os
import re
import signal
import subprocess
import time

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def wait_for_port(process, pattern):
    line = process.stdout.readline().decode()
    match = re.search(pattern, line)
    if not match:
        raise SystemExit(f"no port in: {line!r}")
    return int(match.group(1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--warmup", type=float, default=15)
    # ffmpeg reads the test station's live HLS window and stops: compare on ICY.
    parser.add_argument("--source", choices=["hls", "icy"], default="icy")
    args = parser.parse_args()

    children = []

    def start(command, **kwargs):
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, **kwargs)
        children.append(process)
        return process

    try:
        # The station encodes its AAC programme with ffmpeg first: it says "listening" when it is done.
        station = start([f"{args.bin_dir}/airtap-teststation", "--port", "0", "--codec", "aac", "--bitrate", "128",
                         "--track-seconds", "20", "--hls", "packed-audio", "--hls-segment-seconds", "2"],
                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        station_port = wait_for_port(station, r"listening 127\.0\.0\.1:(\d+)")
        url = f"http://127.0.0.1:{station_port}/" + ("hls/master.m3u8" if args.source == "hls" else "stream")

        measured = {}
        for name, extra in [("airtap serve --transcode mp3:128k", ["--transcode", "mp3:128k"]), ("airtap serve (relay only)", [])]:
            serve = start([f"{args.bin_dir}/airtap", "serve", url, "--listen", "127.0.0.1:0", *extra],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            port = wait_for_port(serve, r"listening 127\.0\.0\.1:(\d+)")
            start(["curl", "-s", "-o", "/dev/null", f"http://127.0.0.1:{port}/stream"])
            measured[name] = serve
        measured["ffmpeg -c:a libmp3lame -b:a 128k"] = start(
            ["ffmpeg", "-nostdin", "-v", "error", "-i", url, "-c:a", "libmp3lame", "-b:a", "128k", "-f", "mp3", "-"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        time.sleep(args.warmup)
        before = {name: cpu_seconds(p.pid) for name, p in measured.items()}
        start_time = time.monotonic()
        time.sleep(args.seconds)
        elapsed = time.monotonic() - start_time
        after = {name: cpu_seconds(p.pid) for name, p in measured.items()}
        print(f"| process ({args.source} AAC 128k source, {elapsed:.0f} s window) | CPU s | % of one core |")
        print("|---|---|---|")
        for name in measured:
            used = after[name] - before[name]
            print(f"| {name} | {used:.2f} | {100 * used / elapsed:.2f} |")
    finally:
        for process in reversed(children):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in children:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


if __name__ == "__main__":
    main()
