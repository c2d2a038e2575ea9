# bench/lib/bench.sh: what the runners (bench/*/run) share. Sourced, after `set -euo pipefail`:
#
#   . "$(dirname "$(readlink -f "$0")")/../lib/bench.sh"
#
# Sets root (the repository), prog (bench/NAME/run, for messages) and the defaults of the
# options every runner knows, which bench_option parses:
#   --host, --vm  where the run goes (wheres: the list, in order)
#   --quick       a smoke run (quick=1)
#   --build DIR   meson build dir (build; default build-bench)
#   --out DIR     results (out; the runner picks the default)
#   --kernel K    VM kernel flavour (kernel; default patched)
#   --inner FILE  internal: run one set here, results to FILE (inner)
#   -h, --help    the runner's header comment
# Benchmarks, not tests: nothing here fails because something was slow.

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
prog=bench/$(basename "$(dirname "$(readlink -f "$0")")")/$(basename "$0")
wheres=() quick=0 inner=
build=$root/build-bench
out=
kernel=patched

# The header comment of the runner, from its second line to the first line that is not one.
bench_help() {
    sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'
}

# bench_option "$@": one of the options above? Then bench_shift is how many words it took;
# else it returns 1 (a runner's own option, or an unknown one: bench_unknown).
bench_option() {
    bench_shift=1
    case $1 in
        --host|--vm) wheres+=("${1#--}") ;;
        --quick) quick=1 ;;
        --build) build=$(readlink -f "${2:?}"); bench_shift=2 ;;
        --out) out=${2:?}; bench_shift=2 ;;
        --kernel) kernel=${2:?}; bench_shift=2 ;;
        --inner) inner=${2:?}; bench_shift=2 ;;
        -h|--help) bench_help; exit 0 ;;
        *) return 1 ;;
    esac
}

# For a runner that runs in one place: where, the last of --host and --vm (default host).
bench_one_where() {
    where=host
    [ ${#wheres[@]} -eq 0 ] || where=${wheres[-1]}
}

bench_unknown() {
    echo "$prog: unknown argument '$1'" >&2
    exit 2
}

# bench_build TARGET...: set up the build dir when it has no build.ninja, build the targets.
bench_build() {
    if [ ! -f "$build/build.ninja" ]; then
        meson setup "$build" "$root" >/dev/null || { echo "$prog: meson setup failed" >&2; exit 1; }
    fi
    ninja -C "$build" "$@" >/dev/null || { echo "$prog: build failed" >&2; exit 1; }
}

# Create the results folder and make out its absolute path.
bench_out_dir() {
    mkdir -p "$out"
    out=$(cd "$out" && pwd -P)
}

# bench_sandbox NAME: a tmpfs on /run with /run/nsd and /run/NAME (the work folder) in it.
# Only ever called inside `unshare -m --propagation private` (the host) or in the VM, whose
# /run is its own (see bench_place): this machine's own mounts never change.
bench_sandbox() {
    mount -t tmpfs -o mode=0755 "$1" /run
    mkdir -p /run/nsd "/run/$1"
}

# bench_nsd_conf FILE [LINE...]: an nsd.conf that manages the synthetic users 100000..199999
# (numeric policy: no user database needed), then the given lines ([Namespaces] keys first).
bench_nsd_conf() {
    local f=$1
    shift
    {
        echo "# nsd.conf for $prog: synthetic users 100000..199999"
        printf '%s\n' '[Namespaces]' 'Users=@regular' 'MinUid=100000' 'MaxUid=199999' "$@"
    } >"$f"
}

# bench_place host|vm TIMEOUT CMD...: CMD inside `unshare -m --propagation private`, on this
# machine or in a VM (tests/vm/run --kernel $kernel, results folder $out; one VM at a time on
# this machine: it waits for the others). TIMEOUT: the VM's, in seconds.
bench_place() {
    local where=$1 timeout=$2
    shift 2
    if [ "$where" = host ]; then
        unshare -m --propagation private "$@"
    else
        flock /tmp/nsd-vm.lock "$root/tests/vm/run" --kernel "$kernel" --timeout "$timeout" \
            --out "$out" -- unshare -m --propagation private "$@"
    fi
}

# The load average, "1.00 0.50 0.25".
bench_load() {
    cut -d' ' -f1-3 /proc/loadavg
}
