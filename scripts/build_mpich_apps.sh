#!/usr/bin/env bash
# Builds Debian's hpcc (and, with --lammps, LAMMPS) against MPICH, for the interposer's tests and
# benchmarks: Debian's own hpcc and lammps packages link Open MPI only, so without this the MPICH
# interposer is never tried on a real application.
#
# Usage: scripts/build_mpich_apps.sh [--lammps]
# Output: $COMMPERF_APPS_DIR (default target/mpich-apps)/bin/hpcc (and bin/lmp with --lammps).
# Idempotent: a binary already built is kept (delete it to rebuild). Needs root for apt-get when
# something is missing (mpicc.mpich, libblas-dev, cmake, the deb-src entry).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${COMMPERF_APPS_DIR:-$PWD/target/mpich-apps}
LAMMPS=0
for a in "$@"; do
    case $a in
        --lammps) LAMMPS=1 ;;
        *) echo "build_mpich_apps.sh: unknown argument '$a' (only --lammps)" >&2; exit 2 ;;
    esac
done
mkdir -p "$DIR/src" "$DIR/bin"

need=()
command -v mpicc.mpich >/dev/null || need+=(libmpich-dev mpich)
[ -e /usr/lib/x86_64-linux-gnu/libblas.so ] || ls /usr/lib/*/libblas.so >/dev/null 2>&1 || need+=(libblas-dev)
command -v dpkg-source >/dev/null || need+=(dpkg-dev)
[ $LAMMPS = 1 ] && { command -v cmake >/dev/null || need+=(cmake); }
# apt-get source needs a deb-src entry; Debian images ship without one.
if ! grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        "$suite" > /etc/apt/sources.list.d/commperf-src.sources
    updated=0
else
    updated=1
fi
if [ ${#need[@]} -gt 0 ] || [ $updated = 0 ]; then
    apt-get update -qq
fi
if [ ${#need[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

# The upstream tarball only: `apt-get source --download-only` also asks for the Debian patches,
# which may be missing from the mirror (the debian.tar.xz of hpcc 1.5.0-3 404s); the orig tarball
# is all we need, so a failed download is fine as long as it arrived.
fetch() { # package -> path of its orig tarball
    local pkg=$1 t
    t=$(ls "$DIR/src/${pkg}_"*.orig.tar.* 2>/dev/null | head -1 || true)
    if [ -z "$t" ]; then
        (cd "$DIR/src" && apt-get source --download-only "$pkg" >/dev/null 2>&1 || true)
        t=$(ls "$DIR/src/${pkg}_"*.orig.tar.* 2>/dev/null | head -1 || true)
    fi
    if [ -z "$t" ]; then # a deb-src entry whose index was never downloaded
        apt-get update -qq >&2
        (cd "$DIR/src" && apt-get source --download-only "$pkg" >/dev/null 2>&1 || true)
        t=$(ls "$DIR/src/${pkg}_"*.orig.tar.* 2>/dev/null | head -1 || true)
    fi
    [ -n "$t" ] || { echo "build_mpich_apps.sh: could not fetch the source of $pkg (apt-get source)" >&2; exit 1; }
    echo "$t"
}

if [ ! -x "$DIR/bin/hpcc" ]; then
    t=$(fetch hpcc)
    rm -rf "$DIR/src/hpcc" && mkdir -p "$DIR/src/hpcc"
    tar xf "$t" -C "$DIR/src/hpcc" --strip-components=1
    # HPL's make setup: one Make.<arch> file. Reference BLAS through its Fortran interface
    # (single-threaded, as Debian's hpcc uses libblas.so.3), MPI from mpicc.mpich.
    cat > "$DIR/src/hpcc/hpl/Make.mpich" <<'EOF'
SHELL        = /bin/sh
CD           = cd
CP           = cp
LN_S         = ln -s
MKDIR        = mkdir -p
RM           = /bin/rm -f
TOUCH        = touch
ARCH         = mpich
TOPdir       = ../../..
INCdir       = $(TOPdir)/include
BINdir       = $(TOPdir)/bin/$(ARCH)
LIBdir       = $(TOPdir)/lib/$(ARCH)
HPLlib       = $(LIBdir)/libhpl.a
MPinc        =
MPlib        =
LAinc        =
LAlib        = -lblas
F2CDEFS      = -DAdd_ -DF77_INTEGER=int -DStringSunStyle
HPL_INCLUDES = -I$(INCdir) -I$(INCdir)/$(ARCH) $(LAinc) $(MPinc)
HPL_LIBS     = $(HPLlib) $(LAlib) $(MPlib) -lm
HPL_OPTS     =
HPL_DEFS     = $(F2CDEFS) $(HPL_OPTS) $(HPL_INCLUDES)
CC           = mpicc.mpich
CCNOOPT      = $(HPL_DEFS)
CCFLAGS      = $(HPL_DEFS) -fomit-frame-pointer -O2 -w -fcommon
LINKER       = mpicc.mpich
LINKFLAGS    = $(CCFLAGS)
ARCHIVER     = ar
ARFLAGS      = r
RANLIB       = echo
EOF
    (cd "$DIR/src/hpcc" && make arch=mpich -j"$(nproc)" >"$DIR/src/hpcc-build.log" 2>&1) || {
        echo "build_mpich_apps.sh: hpcc build failed, see $DIR/src/hpcc-build.log:" >&2
        tail -20 "$DIR/src/hpcc-build.log" >&2
        exit 1
    }
    cp "$DIR/src/hpcc/hpcc" "$DIR/bin/hpcc.tmp" && mv "$DIR/bin/hpcc.tmp" "$DIR/bin/hpcc"
fi
echo "hpcc (MPICH): $DIR/bin/hpcc"

if [ $LAMMPS = 1 ]; then
    if [ ! -x "$DIR/bin/lmp" ]; then
        t=$(fetch lammps)
        rm -rf "$DIR/src/lammps" && mkdir -p "$DIR/src/lammps"
        tar xf "$t" -C "$DIR/src/lammps" --strip-components=1
        # No optional packages: in.lj needs only the core (pair lj/cut, fix nve).
        cmake -S "$DIR/src/lammps/cmake" -B "$DIR/src/lammps/build" -DCMAKE_BUILD_TYPE=Release \
            -DBUILD_MPI=on -DMPI_C_COMPILER=mpicc.mpich -DMPI_CXX_COMPILER=mpicxx.mpich \
            -DCMAKE_C_COMPILER=mpicc.mpich -DCMAKE_CXX_COMPILER=mpicxx.mpich \
            -DBUILD_OMP=off -DPKG_GPU=off -DLAMMPS_EXCEPTIONS=off -DWITH_JPEG=off -DWITH_PNG=off \
            -DWITH_FFMPEG=off -DWITH_GZIP=off >"$DIR/src/lammps-build.log" 2>&1 &&
            cmake --build "$DIR/src/lammps/build" -j"$(nproc)" >>"$DIR/src/lammps-build.log" 2>&1 || {
            echo "build_mpich_apps.sh: lammps build failed, see $DIR/src/lammps-build.log:" >&2
            tail -20 "$DIR/src/lammps-build.log" >&2
            exit 1
        }
        cp "$DIR/src/lammps/build/lmp" "$DIR/bin/lmp.tmp" && mv "$DIR/bin/lmp.tmp" "$DIR/bin/lmp"
    fi
    echo "lammps (MPICH): $DIR/bin/lmp"
fi
