"""A real Prometheus server for a test: own config and storage in tmp, loopback port."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from referee.embedded_redis import free_port
from referee.procs import stop_process

T = TypeVar("T")

PROMETHEUS = shutil.which("prometheus")
SKIP_REASON = "the prometheus binary is not installed (apt-get install prometheus; .ci/run does it)"


class PromClient:
    def __init__(self, base: str, log_path: Path) -> None:
        self.base = base
        self.log_path = log_path

    def get(self, path: str, **params: Any) -> Any:
        url = f"{self.base}{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params, doseq=True)
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                payload = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            payload = json.loads(exc.read() or b"{}")
            raise AssertionError(f"Prometheus {path} {params}: {exc.code} {payload}") from None
        assert payload.get("status") == "success", payload
        return payload["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        data = self.get("/api/v1/query", **params)
        result: list[dict[str, Any]] = data["result"]
        return result

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        data = self.get(
            "/api/v1/query_range",
            query=expr,
            start=f"{start:.3f}",
            end=f"{end:.3f}",
            step=f"{step:g}",
        )
        result: list[dict[str, Any]] = data["result"]
        return result

    def label_values(self, label: str, match: str) -> list[str]:
        values: list[str] = self.get(f"/api/v1/label/{label}/values", **{"match[]": match})
        return values

    def scrapes(self, metric: str = "arena_redis_up") -> int:
        """How many scrapes of the referee Prometheus has stored so far."""
        result = self.query(f"count_over_time({metric}[1h])")
        return int(float(result[0]["value"][1])) if result else 0

    def wait_for_scrapes(self, more_than: int, timeout: float = 60.0) -> int:
        def probe() -> int | None:
            n = self.scrapes()
            return n if n > more_than else None

        return wait_until(
            probe,
            timeout,
            lambda: f"Prometheus stored no scrape beyond {more_than}; log: {self.log_tail()}",
        )

    def log_tail(self) -> str:
        return self.log_path.read_text()[-2000:] if self.log_path.exists() else ""


def wait_until(
    probe: Callable[[], T | None], timeout: float, message: str | Callable[[], str]
) -> T:
    """Poll ``probe`` until it returns something truthy (events, not a fixed sleep)."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(message if isinstance(message, str) else message())
        time.sleep(0.1)


@contextlib.contextmanager
def prometheus(
    tmp: Path, target: str, scrape_interval: str = "1s", rule_files: tuple[Path, ...] = ()
) -> Iterator[PromClient]:
    """Start Prometheus scraping ``target`` (host:port) and evaluating ``rule_files``;
    stop it on exit."""
    assert PROMETHEUS is not None, SKIP_REASON
    tmp.mkdir(parents=True, exist_ok=True)
    config = tmp / "prometheus.yml"
    config.write_text(
        "global:\n"
        f"  scrape_interval: {scrape_interval}\n"
        f"  evaluation_interval: {scrape_interval}\n"
        + ("rule_files:\n" if rule_files else "")
        + "".join(f"  - '{path}'\n" for path in rule_files)
        + "scrape_configs:\n"
        "  - job_name: arena-referee\n"
        "    scrape_timeout: 1s\n"
        "    static_configs:\n"
        f"      - targets: ['{target}']\n"
    )
    port = free_port()
    log_path = tmp / "prometheus.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    client = PromClient(f"http://127.0.0.1:{port}", log_path)

    def ready() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"prometheus exited: {client.log_tail()}")
        try:
            with urllib.request.urlopen(f"{client.base}/-/ready", timeout=2) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    try:
        wait_until(ready, 60, lambda: f"prometheus not ready in 60 s: {client.log_tail()}")
        yield client
    finally:
        stop_process(process, 15)
