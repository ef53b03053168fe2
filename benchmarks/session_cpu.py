"""CPU of a connected voice session in which nobody speaks, with a real browser as the client.

Annie as ``annie serve`` runs it (its own process, a data dir of its own, no greeting), and
Debian's Chromium, driven by Playwright, opens the page, presses Talk and stays connected
with a fake microphone playing quiet noise. The CPU of Annie's process and of Chromium's
processes is taken over windows of the connected session, and over one window with the
page open before Talk (the baseline of a page at rest). On two cores both shares are taken
from the LLM server whenever it reads a prompt (``benchmarks.voice_latency`` records that
split in the turns, with its own WebRTC client in place of the browser).

Runs alternate Annie's settings (by default ``ANNIE_VOICE_DTX`` on and off, the order
swapped in every other pair), each a fresh server and browser; the result reports the mean
of every setting's windows and their ratios to the baseline setting's.

    python -m benchmarks.session_cpu [--pairs 2] [--windows 3] [--window-s 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
import wave
from pathlib import Path

import httpx
import numpy as np
import psutil

from benchmarks.common import write_result
from models.process import free_port

CHROMIUM = Path("/usr/bin/chromium")
RATE = 48000
# The settings compared: the first is the code's default, the second the baseline.
SETTINGS = {"dtx_on": {"ANNIE_VOICE_DTX": "true"}, "dtx_off": {"ANNIE_VOICE_DTX": "false"}}


def quiet_mic(path: Path, seconds: int = 600) -> Path:
    """A WAV of a quiet room (noise at -60 dBFS) for Chromium's fake microphone."""
    noise = np.random.default_rng(0).normal(0, 30, RATE * seconds).astype(np.int16)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        out.writeframes(noise.tobytes())
    return path


def cpu_seconds(processes: list[psutil.Process]) -> float:
    """User and system CPU seconds of the processes still running."""
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def chromium_root() -> int:
    """The Chromium process this process started (through Playwright's driver)."""
    for child in psutil.Process().children(recursive=True):
        if child.name().startswith("chromium") and not child.parent().name().startswith("chromium"):
            return child.pid
    raise RuntimeError("no Chromium process under this one")


def browser_processes(browser_pid: int) -> list[psutil.Process]:
    """Chromium's processes: the browser and every process under it."""
    try:
        root = psutil.Process(browser_pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


async def window(annie: psutil.Process, browser_pid: int, seconds: float) -> dict[str, float]:
    """Cores Annie's process and Chromium's processes used on average over ``seconds``."""
    browser = browser_processes(browser_pid)
    start_annie, start_browser, start = cpu_seconds([annie]), cpu_seconds(browser), time.monotonic()
    await asyncio.sleep(seconds)
    elapsed = time.monotonic() - start
    return {"annie": round((cpu_seconds([annie]) - start_annie) / elapsed, 4),
            "browser": round((cpu_seconds(browser) - start_browser) / elapsed, 4)}


async def wait_healthy(url: str, server: asyncio.subprocess.Process, timeout_s: float = 600) -> None:
    deadline = time.monotonic() + timeout_s
    async with httpx.AsyncClient() as client:
        while time.monotonic() < deadline:
            if server.returncode is not None:
                raise RuntimeError(f"annie serve exited with {server.returncode}; its log is above")
            try:
                if (await client.get(f"{url}/health", timeout=2)).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(1)
    raise RuntimeError(f"annie serve did not answer at {url}/health within {timeout_s:.0f} s")


async def one_run(label: str, env: dict[str, str], windows: int, window_s: float, tmp: Path) -> dict:
    """Start Annie with ``env``, connect Chromium, and measure; the run's windows."""
    from playwright.async_api import async_playwright, expect

    token, port = secrets.token_urlsafe(16), free_port()
    url = f"http://127.0.0.1:{port}"
    data = tmp / f"data-{label}-{time.monotonic_ns()}"
    server_env = {**os.environ, "ANNIE_DATA_DIR": str(data), "ANNIE_TOKEN": token, "ANNIE_PORT": str(port),
                  "ANNIE_GREETING": "", **env}
    print(f"[{label}] starting Annie ({' '.join(f'{k}={v}' for k, v in env.items())})", flush=True)
    server = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "annie"), "serve", env=server_env,
        stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)  # its log lines (stderr) go where ours go
    try:
        await wait_healthy(url, server)
        annie = psutil.Process(server.pid)
        args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
                "--allow-loopback-in-peer-connection", "--use-fake-ui-for-media-stream",
                "--use-fake-device-for-media-stream", f"--use-file-for-fake-audio-capture={tmp / 'mic.wav'}",
                "--autoplay-policy=no-user-gesture-required"]
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=str(CHROMIUM), args=args)
            try:
                browser_pid = chromium_root()
                page = await browser.new_page()
                await page.goto(f"{url}/")
                await page.fill("#token-input", token)
                await page.click("#token-form button[type=submit]")
                await expect(page.locator("#status")).to_contain_text("Ready", timeout=120_000)
                await asyncio.sleep(5)  # the page's warm-up request is done
                page_open = await window(annie, browser_pid, window_s / 2)
                await page.click("#talk")
                await expect(page.locator("#status")).to_contain_text(re.compile("Connected|Listening"),
                                                                      timeout=60_000)
                await asyncio.sleep(3)
                session = []
                for i in range(windows):
                    session.append(await window(annie, browser_pid, window_s))
                    print(f"[{label}] window {i + 1}/{windows}: Annie {session[-1]['annie']:.3f} cores, "
                          f"Chromium {session[-1]['browser']:.3f}", flush=True)
            finally:
                await browser.close()
    finally:
        server.terminate()
        try:
            await asyncio.wait_for(server.wait(), 60)
        except TimeoutError:
            server.kill()
            await server.wait()
    return {"setting": label, "env": env, "page_open": page_open, "session": session}


def summarize(runs: list[dict], baseline: str) -> dict:
    """Mean cores per setting over every window of its runs, and each setting's ratio to the
    ``baseline`` setting's (below 1: fewer cores)."""
    means: dict[str, dict[str, float]] = {}
    for label in dict.fromkeys(run["setting"] for run in runs):
        windows = [w for run in runs if run["setting"] == label for w in run["session"]]
        annie = float(np.mean([w["annie"] for w in windows]))
        browser = float(np.mean([w["browser"] for w in windows]))
        means[label] = {"windows": len(windows), "annie_cores": round(annie, 4), "browser_cores": round(browser, 4),
                        "total_cores": round(annie + browser, 4)}
    base = means[baseline]
    ratios = {label: {key: round(m[key] / base[key], 3) for key in ("annie_cores", "browser_cores", "total_cores")}
              for label, m in means.items() if label != baseline}
    return {"mean": means, "ratio_to_" + baseline: ratios}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2, help="runs of each setting, alternating")
    parser.add_argument("--windows", type=int, default=3, help="windows per run")
    parser.add_argument("--window-s", type=float, default=20.0)
    parser.add_argument("--name", default="session_cpu", help="result file name")
    args = parser.parse_args()
    if not CHROMIUM.exists():
        sys.exit("needs Debian's chromium: apt-get install -y chromium")
    labels = list(SETTINGS)
    load_before = os.getloadavg()
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        quiet_mic(Path(tmp) / "mic.wav")
        for pair in range(args.pairs):
            for label in labels if pair % 2 == 0 else labels[::-1]:
                runs.append(await one_run(label, SETTINGS[label], args.windows, args.window_s, Path(tmp)))
    write_result(args.name, {"load_average_before": [round(x, 2) for x in load_before],
                             "window_s": args.window_s, **summarize(runs, baseline=labels[-1]), "runs": runs,
                             "note": "Cores used on average over windows of a connected voice session in which "
                                     "nobody speaks: Annie's process (annie serve; its LLM and embedding servers "
                                     "idle, not counted) and every Chromium process (the page, its audio and "
                                     "network services). 'page_open' is the page before Talk."})


if __name__ == "__main__":
    asyncio.run(main())
