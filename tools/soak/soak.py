#!/usr/bin/env python3
"""tools/soak: a long run of `airtap serve --record` against hostile stations and listeners.

    tools/soak/soak.py [--minutes 30] [--stations 50] [--listeners 20] [--bin-dir DIR] [--quick]

What runs, all on 127.0.0.1:
- airtap-teststation --realtime: one upstream of LAME-encoded tones (titles every 20 s, 1 s gaps).
- A hostile proxy in this script: each station sN is a path on it. Every connection to it gets the
  next mode of a rotation (clean, drop mid-frame, reset, stall, drip, garbage between frames,
  metadata blocks shorter than their length byte, hostile titles, a big in-stream ID3v2 tag, a
  503 answer). The proxy demuxes the upstream's ICY stream and re-muxes it with its own metaint,
  so it knows every whole MP3 frame it sent each station, in order.
- `airtap serve s0..sN --record`, recording every station per track, with listeners that
  connect, read a while and then close, reset, stop reading, or send a bad request.

The first and the last minute are calm (clean mode, no listeners): descriptors are counted then.
At the end (SIGTERM, exit 0 expected) it checks:
- memory levelled off: RSS of the second half grows by less than 5 %;
- no descriptor leaked: the calm end holds no more descriptors than the calm start (+2);
- every recorded frame is a frame the proxy sent that station, each once and in order (the
  station's files, in {seq} order, form a subsequence of what was sent), and every file is
  made only of whole frames (after airtap's ID3v2 tag and its Info frame): no corrupt frame;
- how many of the frames sent were kept (hostile modes cost frames by design: a frame followed by
  garbage is dropped as possibly stitched, a drop or a reset loses the frame it cut).
Prints a summary and writes soak-result.json. Exit 0 when every check passed.
Not part of CI.
"""
import argparse
import asyncio
import hashlib
import json
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOST = "127.0.0.1"
PROXY_METAINT = 8192
MODES = ["clean", "drop", "reset", "stall", "drip", "garbage", "shortmeta", "titles", "id3", "http503"]

BITRATES_V1_L3 = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 0]
BITRATES_V2_L3 = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160, 0]
RATES = {3: [44100, 48000, 32000], 2: [22050, 24000, 16000], 0: [11025, 12000, 8000]}


def log(msg):
    print(f"[soak {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def frame_length(b, i):
    """Length of the MPEG audio Layer III frame whose header starts at b[i], or 0."""
    if i + 4 > len(b) or b[i] != 0xFF or (b[i + 1] & 0xE0) != 0xE0:
        return 0
    version = (b[i + 1] >> 3) & 3
    layer = (b[i + 1] >> 1) & 3
    if version == 1 or layer != 1:
        return 0
    br_index = b[i + 2] >> 4
    sr_index = (b[i + 2] >> 2) & 3
    if sr_index == 3 or br_index in (0, 15):
        return 0
    padding = (b[i + 2] >> 1) & 1
    rate = RATES[version][sr_index]
    if version == 3:
        return 144000 * BITRATES_V1_L3[br_index] // rate + padding
    return 72000 * BITRATES_V2_L3[br_index] // rate + padding


def frame_hash(frame):
    return hashlib.blake2b(frame, digest_size=8).digest()


# --- the hostile proxy ---------------------------------------------------------------------------

class Muxer:
    """Re-muxes audio and titles with PROXY_METAINT, and can break the rules on purpose."""

    def __init__(self, writer, with_meta):
        self.writer = writer
        self.with_meta = with_meta
        self.until_meta = PROXY_METAINT
        self.pending_title = None
        self.short_meta = False

    def title(self, text):
        self.pending_title = text

    def _meta_block(self):
        if self.pending_title is None:
            return b"\x00"
        text = self.pending_title
        self.pending_title = None
        data = f"StreamTitle='{text}';".encode("utf-8", "surrogateescape")[: 255 * 16]
        blocks = (len(data) + 15) // 16
        block = bytes([blocks]) + data + b"\x00" * (blocks * 16 - len(data))
        padding = blocks * 16 - len(data)
        if self.short_meta and padding > 0:
            # The length byte promises `blocks` units; some of the NUL padding never comes. (A
            # block cut inside its text is not recoverable byte-exactly: docs/reliability.md.)
            return block[: 1 + blocks * 16 - random.randint(1, padding)]
        return block

    def audio(self, data):
        """Writes audio bytes (garbage included: the muxer does not care what they are)."""
        if not self.with_meta:
            self.writer.write(data)
            return
        out = bytearray()
        while data:
            n = min(len(data), self.until_meta)
            out += data[:n]
            data = data[n:]
            self.until_meta -= n
            if self.until_meta == 0:
                out += self._meta_block()
                self.until_meta = PROXY_METAINT
        self.writer.write(bytes(out))


def hostile_title(n):
    choices = [
        f"Artist {n} - Esc\x1b[2J\x1b]52;c;cHduZWQ=\x07 Title",
        f"Artist {n} - New\nLine\r\x9b31m Forged",
        "Ünïcödé – " + "L" * 3000,
        f"Artist {n} - " + "\udcff\udcfe invalid UTF-8",
        f"Artist {n} - quote ' ; StreamUrl='x'; title",
    ]
    return choices[n % len(choices)]


def id3_tag(size):
    body = b"TIT2" + struct.pack(">I", 12)[0:4] + b"\x00\x00" + b"\x03Soak tag!!!"
    body += b"\x00" * (size - len(body))
    ss = len(body)
    syncsafe = bytes([(ss >> 21) & 0x7F, (ss >> 14) & 0x7F, (ss >> 7) & 0x7F, ss & 0x7F])
    return b"ID3\x04\x00\x00" + syncsafe + body


class Proxy:
    def __init__(self, upstream_port, stations, seed):
        self.upstream_port = upstream_port
        self.rng = random.Random(seed)
        self.sent = {f"s{i}": [] for i in range(stations)}  # whole frames sent, as hashes, in order
        self.connections = {f"s{i}": 0 for i in range(stations)}
        self.mode_counts = {m: 0 for m in MODES}
        self.calm = True
        self.next_mode = 0
        self.hostile_events = 0

    def choose_mode(self):
        if self.calm:
            return "clean"
        mode = MODES[self.next_mode % len(MODES)]
        self.next_mode += 1
        return mode

    async def handle(self, reader, writer):
        try:
            await self._handle(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            pass
        finally:
            try:
                writer.close()
            except Exception:
                pass

    async def _handle(self, reader, writer):
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        path = head.split(b" ")[1].decode(errors="replace").lstrip("/")
        if path not in self.sent:
            writer.write(b"HTTP/1.0 404 Not Found\r\n\r\n")
            return
        with_meta = b"icy-metadata: 1" in head.lower()
        mode = self.choose_mode()
        self.mode_counts[mode] += 1
        self.connections[path] += 1
        if mode == "http503":
            writer.write(b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain\r\n\r\nbusy\n")
            await writer.drain()
            return
        up_reader, up_writer = await asyncio.open_connection(HOST, self.upstream_port)
        try:
            up_writer.write(b"GET /stream HTTP/1.0\r\nHost: soak\r\nIcy-MetaData: 1\r\n\r\n")
            up_head = await asyncio.wait_for(up_reader.readuntil(b"\r\n\r\n"), 30)
            m = re.search(rb"icy-metaint:\s*(\d+)", up_head, re.I)
            up_metaint = int(m.group(1))
            fields = [b"HTTP/1.0 200 OK", b"Content-Type: audio/mpeg", f"icy-name: Soak {path}".encode()]
            if with_meta:
                fields.append(f"icy-metaint: {PROXY_METAINT}".encode())
            writer.write(b"\r\n".join(fields) + b"\r\n\r\n")
            await self._stream(path, mode, with_meta, up_reader, up_metaint, writer)
        finally:
            up_writer.close()

    async def _stream(self, path, mode, with_meta, up, up_metaint, writer):
        rng = self.rng
        mux = Muxer(writer, with_meta)
        mux.short_meta = mode == "shortmeta"
        sent = self.sent[path]
        started = time.monotonic()
        lifetime = rng.uniform(20, 90) if mode != "clean" else rng.uniform(60, 240)
        started_calm = self.calm
        if started_calm:
            lifetime = 1e9
        audio = bytearray()
        next_hostile = started + rng.uniform(3, 8)
        title_count = 0
        while True:
            chunk = await up.readexactly(up_metaint)
            length = (await up.readexactly(1))[0] * 16
            meta = await up.readexactly(length) if length else b""
            audio += chunk
            # Whole frames only go out (the tail waits for the next chunk).
            i = 0
            out = bytearray()
            frames = []
            while True:
                n = frame_length(audio, i)
                if n == 0 or i + n > len(audio):
                    if n == 0 and i + 4 <= len(audio):
                        i += 1  # not expected from the test station: skip to the next sync
                        continue
                    break
                frames.append(bytes(audio[i:i + n]))
                i += n
            del audio[:i]
            now = time.monotonic()
            hostile_now = mode in ("garbage", "id3") and now >= next_hostile
            for k, frame in enumerate(frames):
                out += frame
                sent.append(frame_hash(frame))
                if hostile_now and k == len(frames) // 2:
                    if mode == "garbage":
                        out += bytes(rng.getrandbits(8) for _ in range(rng.randint(50, 3000)))
                    else:
                        out += id3_tag(rng.choice([2000, 64000, 300000]))
                    self.hostile_events += 1
                    next_hostile = now + rng.uniform(3, 8)
            mux.audio(bytes(out))
            if meta:
                text = meta.rstrip(b"\x00").decode("utf-8", "replace")
                m = re.match(r"StreamTitle='(.*)';", text, re.S)
                if m:
                    title_count += 1
                    mux.title(hostile_title(title_count) if mode == "titles" else m.group(1))
            await writer.drain()
            if started_calm and not self.calm and lifetime == 1e9:
                lifetime = now - started + rng.uniform(0, 30)  # the hostile phase began: rotate soon
            if not started_calm and self.calm:
                mode = "drop"  # the calm end began: every hostile connection ends now
                lifetime = 0
            if now - started < lifetime:
                continue
            # The mode's end.
            if mode == "stall":
                await asyncio.sleep(40)  # past airtap's 15 s stall timeout
                return
            if mode == "drip":
                for _ in range(40):  # 40 bytes a second for 40 s: under 256 B/s is a stall
                    writer.write(bytes(rng.getrandbits(8) for _ in range(40)))
                    await writer.drain()
                    await asyncio.sleep(1)
                return
            if mode == "reset":
                sock = writer.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
                return
            if mode in ("drop", "clean", "garbage", "id3", "shortmeta", "titles"):
                # End inside the next frame: a cut a recorder must not keep.
                nxt = frames[-1] if frames else b""
                if nxt:
                    mux.audio(nxt[: len(nxt) // 2])
                await writer.drain()
                return


# --- listeners of airtap serve -------------------------------------------------------------------

class Listeners:
    def __init__(self, port, stations, count, seed):
        self.port = port
        self.stations = stations
        self.count = count
        self.rng = random.Random(seed)
        self.active = False
        self.stats = {"connected": 0, "bytes": 0, "close": 0, "reset": 0, "stop-reading": 0, "bad-request": 0, "errors": 0}

    async def one(self):
        rng = self.rng
        while True:
            if not self.active:
                await asyncio.sleep(1)
                continue
            station = f"s{rng.randrange(self.stations)}"
            kind = rng.choice(["close", "reset", "stop-reading", "bad-request", "close"])
            try:
                reader, writer = await asyncio.open_connection(HOST, self.port)
                if kind == "bad-request":
                    writer.write(bytes(rng.getrandbits(8) for _ in range(rng.randint(10, 9000))) + b"\r\n\r\n")
                    await writer.drain()
                    try:
                        await asyncio.wait_for(reader.read(4096), 15)
                    except asyncio.TimeoutError:
                        pass
                    writer.close()
                    self.stats["bad-request"] += 1
                    continue
                meta = "Icy-MetaData: 1\r\n" if rng.random() < 0.5 else ""
                writer.write(f"GET /{station} HTTP/1.0\r\nHost: soak\r\n{meta}\r\n".encode())
                await writer.drain()
                self.stats["connected"] += 1
                until = time.monotonic() + rng.uniform(2, 40)
                while time.monotonic() < until and self.active:
                    data = await asyncio.wait_for(reader.read(65536), 30)
                    if not data:
                        break
                    self.stats["bytes"] += len(data)
                if kind == "reset":
                    sock = writer.get_extra_info("socket")
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    writer.transport.abort()
                elif kind == "stop-reading":
                    await asyncio.sleep(rng.uniform(5, 20))  # airtap drops a stalled listener after 10 s
                    writer.close()
                else:
                    writer.close()
                self.stats[kind] += 1
            except (ConnectionError, OSError, asyncio.TimeoutError):
                self.stats["errors"] += 1
                await asyncio.sleep(1)

    def tasks(self):
        return [asyncio.ensure_future(self.one()) for _ in range(self.count)]


# --- sampling and checks -------------------------------------------------------------------------

def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def file_frames(path):
    """(frame hashes, problem or None) of one recorded file."""
    with open(path, "rb") as f:
        b = f.read()
    i = 0
    if b[:3] == b"ID3":
        size = (b[6] << 21) | (b[7] << 14) | (b[8] << 7) | b[9]
        i = 10 + size + (10 if b[5] & 0x10 else 0)
    end = len(b) - (128 if b[-128:-125] == b"TAG" else 0)
    hashes = []
    first = True
    while i < end:
        n = frame_length(b, i)
        if n == 0 or i + n > end:
            return hashes, f"not a whole frame at byte {i} of {len(b)}"
        frame = b[i:i + n]
        if first and (b"Xing" in frame[:64] or b"Info" in frame[:64]):
            pass  # airtap's own Info frame
        else:
            hashes.append(frame_hash(frame))
        first = False
        i += n
    return hashes, None


def check_station(folder, sent):
    """Files of one station in {seq} order: a subsequence of what was sent, each frame once."""
    files = []
    for dirpath, _, names in os.walk(folder):
        for name in names:
            if name.endswith(".mp3") or name.endswith(".mp3.part"):
                m = re.match(r"(\d+) ", name)
                if m:
                    files.append((int(m.group(1)), os.path.join(dirpath, name)))
    files.sort()
    problems = []
    recorded = 0
    j = 0
    positions = {}  # hash -> indexes in `sent`, ascending
    for index, h in enumerate(sent):
        positions.setdefault(h, []).append(index)
    for _, path in files:
        hashes, problem = file_frames(path)
        if problem:
            problems.append(f"{os.path.relpath(path, folder)}: {problem}")
        for k, h in enumerate(hashes):
            # The next place at or after j where this frame was sent: a greedy subsequence match.
            found = next((i for i in positions.get(h, []) if i >= j), None)
            if found is None:
                problems.append(f"{os.path.relpath(path, folder)}: frame {k} was not sent (or repeated, or out of order)")
                continue  # the rest of the station is still checked
            recorded += 1
            j = found + 1
    return {"files": len(files), "recorded": recorded, "sent": len(sent), "problems": problems}


async def main_async(a):
    bins = a.bin_dir
    work = tempfile.mkdtemp(prefix="airtap-soak-")
    out = os.path.join(work, "rec")
    log(f"work folder {work}")
    station = subprocess.Popen([f"{bins}/airtap-teststation", "--port", "0", "--realtime", "--track-seconds", "20",
                                "--gap-seconds", "1"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = station.stdout.readline()
    up_port = int(re.search(r":(\d+)", line).group(1))
    proxy = Proxy(up_port, a.stations, a.seed)
    server = await asyncio.start_server(proxy.handle, HOST, 0)
    proxy_port = server.sockets[0].getsockname()[1]
    stations = {"stations": [{"id": f"s{i}", "name": f"Soak {i}", "url": f"http://{HOST}:{proxy_port}/s{i}"}
                             for i in range(a.stations)]}
    with open(os.path.join(work, "stations.json"), "w") as f:
        json.dump(stations, f)
    serve_log = open(os.path.join(work, "serve.log"), "w")
    serve = subprocess.Popen([f"{bins}/airtap", "serve", *[f"s{i}" for i in range(a.stations)], "--stations",
                              os.path.join(work, "stations.json"), "--listen", f"{HOST}:0", "--record", "--out", out,
                              "--template", "{station}/{seq} {title}", "--log-level", "warning"],
                             stdout=subprocess.PIPE, stderr=serve_log, text=True)
    loop = asyncio.get_running_loop()
    line = await loop.run_in_executor(None, serve.stdout.readline)
    serve_port = int(re.search(r":(\d+)", line).group(1))
    log(f"teststation :{up_port}, proxy :{proxy_port}, airtap serve :{serve_port} (pid {serve.pid})")
    listeners = Listeners(serve_port, a.stations, a.listeners, a.seed + 1)
    listener_tasks = listeners.tasks()

    total = a.minutes * 60
    # Calm end: long enough for a station in its longest backoff (60 s) to be back and steady.
    calm_start, calm_end = min(60, total / 6), min(180, total / 4)
    samples = []
    started = time.monotonic()
    fd_start = fd_end = None
    phase = "calm start"
    while True:
        elapsed = time.monotonic() - started
        if elapsed >= total:
            break
        if phase == "calm start" and elapsed >= calm_start:
            fd_start = fd_count(serve.pid)
            phase = "hostile"
            proxy.calm = False
            listeners.active = True
            log(f"calm start over: {fd_start} descriptors; hostile modes and listeners on")
        elif phase == "hostile" and elapsed >= total - calm_end:
            phase = "calm end"
            proxy.calm = True
            listeners.active = False
            log("calm end: clean connections, no listeners")
        if serve.poll() is not None:
            log(f"airtap serve exited early: {serve.returncode}")
            break
        samples.append({"t": round(elapsed, 1), "rss_kb": rss_kb(serve.pid), "fds": fd_count(serve.pid)})
        if len(samples) % 12 == 0:
            s = samples[-1]
            log(f"{phase}: {s['t']:.0f} s, rss {s['rss_kb'] / 1024:.1f} MB, {s['fds']} fds, "
                f"modes {proxy.mode_counts}, listeners {listeners.stats}")
        await asyncio.sleep(5)
    if serve.poll() is None:
        fd_end = fd_count(serve.pid)
        serve.send_signal(signal.SIGTERM)
    rc = await loop.run_in_executor(None, serve.wait)
    # What was sent, kept for a second look at the recordings (tools/soak/soak.py --recheck).
    os.makedirs(os.path.join(work, "sent"), exist_ok=True)
    for name, hashes in proxy.sent.items():
        with open(os.path.join(work, "sent", name), "wb") as f:
            f.write(b"".join(hashes))
    for t in listener_tasks:
        t.cancel()
    await asyncio.gather(*listener_tasks, return_exceptions=True)
    server.close()
    station.terminate()
    station.wait()
    serve_log.close()

    # Checks.
    result = {"minutes": a.minutes, "stations": a.stations, "listeners": a.listeners, "exit": rc,
              "modes": proxy.mode_counts, "hostile_events": proxy.hostile_events, "listener_stats": listeners.stats,
              "fd_start": fd_start, "fd_end": fd_end}
    half = [s["rss_kb"] for s in samples[len(samples) // 2:]]
    result["rss_mb_peak"] = round(max(s["rss_kb"] for s in samples) / 1024, 1)
    result["rss_mb_second_half"] = [round(min(half) / 1024, 1), round(max(half) / 1024, 1)]
    growth = (half[-1] - half[0]) / half[0] if half and half[0] else 0
    result["rss_growth_second_half"] = round(growth, 4)
    per_station = {}
    sent_total = recorded_total = 0
    problems = []
    for name, sent in proxy.sent.items():
        folder = None
        for candidate in os.listdir(out):
            if candidate == f"Soak {name[1:]}":  # the station's name in stations.json
                folder = os.path.join(out, candidate)
        if folder is None:
            problems.append(f"{name}: no folder")
            continue
        r = check_station(folder, sent)
        per_station[name] = {k: r[k] for k in ("files", "recorded", "sent")}
        sent_total += r["sent"]
        recorded_total += r["recorded"]
        problems += [f"{name}: {p}" for p in r["problems"]]
    result["frames_sent"] = sent_total
    result["frames_recorded"] = recorded_total
    result["kept"] = round(recorded_total / sent_total, 4) if sent_total else 0
    result["files"] = sum(s["files"] for s in per_station.values())
    result["problem_count"] = len(problems)
    result["problems"] = problems[:50]
    checks = {
        "exit 0": rc == 0,
        "memory levelled (second half grew < 5 %)": growth < 0.05,
        "no descriptor leaked (calm end <= calm start + 2)": fd_start is not None and fd_end is not None and fd_end <= fd_start + 2,
        "every recorded frame sent, once, in order; no corrupt frame": not problems,
    }
    result["checks"] = checks
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    for k, v in result.items():
        if k not in ("problems",):
            log(f"{k}: {v}")
    for p in problems[:20]:
        log(f"problem: {p}")
    ok = all(checks.values())
    log(("PASS" if ok else "FAIL") + f"; result in {a.out}; recordings in {out}")
    if ok and not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--stations", type=int, default=50)
    ap.add_argument("--listeners", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="2 minutes, 10 stations, 5 listeners")
    ap.add_argument("--keep", action="store_true", help="keep the recordings even when every check passed")
    ap.add_argument("--bin-dir", default=os.environ.get("AIRTAP_BIN_DIR", os.path.join(ROOT, ".build/release")))
    ap.add_argument("--out", default="soak-result.json")
    a = ap.parse_args()
    if a.quick:
        a.minutes, a.stations, a.listeners = 2, 10, 5
    sys.exit(asyncio.run(main_async(a)))


if __name__ == "__main__":
    main()
