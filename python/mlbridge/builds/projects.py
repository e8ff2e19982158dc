"""The real projects: Debian bookworm source packages with their own tests.

Each :class:`Project` pins every file ``apt-get source --download-only``
fetches (the ``.dsc``, the upstream ``orig`` tarball, Debian's ``debian``
tarball or diff) by sha256, and says how the project builds (its own
build system), how its own test suite runs and is counted, which files are
its linked outputs, and which generated header records what its configure
step detected.

Upstream's sources are built as released: Debian's patches are pinned with
the rest (they are part of what was fetched) but not applied -- the
measurement set is upstream's code and upstream's tests, and the tests
pass with plain clang without them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from .. import _named

__all__ = ["Project", "PROJECTS", "by_name", "select", "BUILD_SYSTEMS", "TEST_FORMATS"]

#: How a project is configured and built.
#: ``autotools``: ``./configure`` then ``make`` (``bootstrap`` first when the
#: tarball is a git tag without ``configure``); ``cmake``: ``cmake -B build``
#: then ``cmake --build``; ``make``: the project's own Makefile, with
#: ``configure`` only when the project has a hand-written one (zlib).
BUILD_SYSTEMS = ("autotools", "cmake", "make")

#: How a test run is counted. ``automake``: the ``# TOTAL:`` / ``# PASS:``
#: summaries of automake's test harness (every directory's, summed);
#: ``ctest``: ctest's ``N tests failed out of M``; ``commands``: each
#: command in ``tests`` is one test, passed when it exits 0.
TEST_FORMATS = ("automake", "ctest", "commands")


@dataclass(frozen=True)
class Project:
    """One Debian source package and how to build and test it."""

    name: str
    #: the Debian version the pins are of
    version: str
    #: every file apt-get downloads -> its sha256
    files: Dict[str, str]
    build_system: str
    #: the folder of the source tree (in the orig tarball) that is built
    top: str
    #: a command run in the source tree before configuring (autoreconf for
    #: tarballs made from git tags)
    bootstrap: Tuple[str, ...] = ()
    #: extra arguments of ./configure or cmake
    configure_args: Tuple[str, ...] = ()
    #: linker flags the project needs with lld in every configuration
    ldflags: Tuple[str, ...] = ()
    #: the build command's make targets (default: the default target)
    build_targets: Tuple[str, ...] = ()
    #: how the tests run: make targets (``make -j2 T``) for automake and
    #: commands formats; for ctest nothing (``ctest`` in the build folder)
    tests: Tuple[str, ...] = ()
    test_format: str = "automake"
    #: environment of the test run
    test_env: Tuple[Tuple[str, str], ...] = ()
    #: globs (relative to the build folder) of the linked outputs whose
    #: ``.text`` is measured: shared libraries and executables (libtool's
    #: real ones, in .libs/: its wrapper scripts are not ELF)
    outputs: Tuple[str, ...] = ()
    #: generated headers (relative to the build folder) that record the
    #: configure step's feature detection
    config_headers: Tuple[str, ...] = ()
    #: C++ is compiled too (CXX/CXXFLAGS get the configuration)
    cxx: bool = False

    @property
    def orig(self) -> str:
        """The upstream tarball's file name."""
        return next(f for f in self.files if ".orig.tar." in f and not f.endswith(".asc"))


def _p(name, version, files, **kw) -> Project:
    return Project(name, version, dict(files), **kw)


PROJECTS: Tuple[Project, ...] = (
    # zlib: a hand-written configure and a plain Makefile; `make test` runs
    # example and minigzip against the static and the shared library.
    # lld refuses its version script without --undefined-version.
    _p("zlib", "1:1.2.13.dfsg-1", {
        "zlib_1.2.13.dfsg-1.dsc":
            "3fa1e6b2fc525062aa88207dda52fed8e045373c809d362fe8a2bfbf7cf515a8",
        "zlib_1.2.13.dfsg.orig.tar.bz2":
            "71feb7947e3c00ef125f83b79a4e529bde31171e5babe48b391f06758d1ab0a1",
        "zlib_1.2.13.dfsg-1.debian.tar.xz":
            "f66cf3d4f2d7defcd4d1fd1fb0a11ee39f1e01b42ec7d059c9dc5c1695133c44"},
       build_system="make", top="zlib-1.2.13.dfsg", ldflags=("-Wl,--undefined-version",),
       tests=("teststatic", "testshared"), test_format="commands",
       outputs=("libz.so.1.2.13", "example", "minigzip", "examplesh", "minigzipsh"),
       config_headers=("zconf.h",)),
    # libyaml: a git tag (autoreconf); automake's harness.
    _p("libyaml", "0.2.5-1", {
        "libyaml_0.2.5-1.dsc":
            "1edbf86e5cd76937ff62892ba6c2537456d645d834d4cd4a82430b8be7051bf4",
        "libyaml_0.2.5.orig.tar.gz":
            "fa240dbf262be053f3898006d502d514936c818e422afdcf33921c63bed9bf2e",
        "libyaml_0.2.5-1.debian.tar.xz":
            "8730e0510129e516c3c7c1cda7428e02a0a122699e57ed203f835a338a686d1f"},
       build_system="autotools", top="libyaml-0.2.5", bootstrap=("autoreconf", "-fi"),
       tests=("check",),
       outputs=("src/.libs/libyaml-0.so.2.0.9", "tests/.libs/run-parser",
                "tests/.libs/run-emitter", "tests/.libs/run-loader", "tests/.libs/run-dumper"),
       config_headers=("include/config.h",)),
    # json-c: CMake; -Werror trips on clang 19's warnings; lld and its
    # version script as zlib.
    _p("json-c", "0.16-2", {
        "json-c_0.16-2.dsc":
            "e91baf0603ed23df4c54030df4cd5e8371a7436006e2b85efab7ee4f1d9718c1",
        "json-c_0.16.orig.tar.gz":
            "3ecaeedffd99a60b1262819f9e60d7d983844073abc74e495cb822b251904185",
        "json-c_0.16-2.debian.tar.xz":
            "64e4334da662d62b735a876567620121f9f07cac9ad01f989034cbcf45c8ac84"},
       build_system="cmake", top="json-c-json-c-0.16-20220414",
       configure_args=("-DDISABLE_WERROR=ON", "-DBUILD_STATIC_LIBS=OFF"),
       ldflags=("-Wl,--undefined-version",), test_format="ctest",
       # its tests run under valgrind when it is installed: minutes, not seconds
       test_env=(("USE_VALGRIND", "0"),),
       outputs=("libjson-c.so.5.2.0", "apps/json_parse"),
       config_headers=("config.h", "json_config.h")),
    # jansson: CMake (its autotools harness runs the suites as one test).
    _p("jansson", "2.14-2", {
        "jansson_2.14-2.dsc":
            "6296ddd9c0a022bd1b70074aefb171cfcdf5694a04ffd32b35fd66097621af87",
        "jansson_2.14.orig.tar.gz":
            "c739578bf6b764aa0752db9a2fdadcfe921c78f1228c7ec0bb47fa804c55d17b",
        "jansson_2.14-2.debian.tar.xz":
            "e89fe4fd8221f6934ddb50f2e7f8404311928d0e23e49a5599f3d3d14ee8cb88"},
       build_system="cmake", top="jansson-2.14",
       configure_args=("-DJANSSON_BUILD_SHARED_LIBS=ON", "-DJANSSON_BUILD_DOCS=OFF",
                       "-DJANSSON_EXAMPLES=OFF"),
       ldflags=("-Wl,--undefined-version",), test_format="ctest",
       outputs=("lib/libjansson.so.4.14.0", "bin/json_process"),
       config_headers=("private_include/jansson_private_config.h", "include/jansson_config.h")),
    # expat: a git tag (autoreconf) in expat/; C and C++ tests.
    _p("expat", "2.5.0-1+deb12u2", {
        "expat_2.5.0-1+deb12u2.dsc":
            "6fc87dbd01f49999ed368cfb37c08d35e41348dda2281d60642f3aa14cb77e32",
        "expat_2.5.0.orig.tar.gz":
            "ab00ee05c7067fd10a35c5d2a4922ebba746ddd50ff83b79c828da17bbdf1757",
        "expat_2.5.0-1+deb12u2.debian.tar.xz":
            "7e29f5db5067e55193540089ed0f3ec9676704cf79dcea81a9bfb9f49435ae53"},
       build_system="autotools", top="libexpat-R_2_5_0/expat", bootstrap=("autoreconf", "-fi"),
       configure_args=("--without-docbook",), tests=("check",), cxx=True,
       outputs=("lib/.libs/libexpat.so.1.8.10", "xmlwf/.libs/xmlwf"),
       config_headers=("expat_config.h",)),
    # brotli: CMake; ctest round-trips the test data through the brotli tool.
    _p("brotli", "1.0.9-2", {
        "brotli_1.0.9-2.dsc":
            "8c4c86748ec9770e08b60233d658593650444b04a452dc5b607ed5b5537b683e",
        "brotli_1.0.9.orig.tar.gz":
            "f9e8d81d0405ba66d181529af42a3354f838c939095ff99930da6aa9cdf6fe46",
        "brotli_1.0.9-2.debian.tar.xz":
            "ab81b1db852c8d01e0fa5b0b650bb486f32a232b35336828423af50af6fecca0"},
       build_system="cmake", top="brotli-1.0.9", test_format="ctest",
       outputs=("libbrotlicommon.so.1.0.9", "libbrotlidec.so.1.0.9",
                "libbrotlienc.so.1.0.9", "brotli"),
       config_headers=()),
    # lz4: a plain Makefile; `make check` is the essentials of tests/, run
    # here one target (one test) at a time.
    _p("lz4", "1.9.4-1", {
        "lz4_1.9.4-1.dsc":
            "e16302bca544d08d106efc216541f4a0403c8f8a5fad5eaac7588223a55af263",
        "lz4_1.9.4.orig.tar.gz":
            "0b0e3aa07c8c063ddf40b082bdf7e37a1562bda40a0ff5272957f3e987e0e54b",
        "lz4_1.9.4-1.debian.tar.xz":
            "47ceec5b95f42598f7b9280b03df9659f2ee6852720ec181488e83bd643f0e5f"},
       build_system="make", top="lz4-1.9.4", build_targets=("lib", "lz4"),
       tests=("-C tests test-lz4-basic", "-C tests test-lz4-multiple",
              "-C tests test-lz4-multiple-legacy", "-C tests test-lz4-frame-concatenation",
              "-C tests test-lz4-testmode", "-C tests test-lz4-contentSize",
              "-C tests test-lz4-dict"),
       test_format="commands",
       outputs=("lib/liblz4.so.1.9.4", "programs/lz4"), config_headers=()),
    # pcre2: release tarball with configure; RunTest and RunGrepTest.
    _p("pcre2", "10.42-1", {
        "pcre2_10.42-1.dsc":
            "726dafe7a8d07332d4df61edf23f384ddb158b2b263846273d1103b6b9a7c176",
        "pcre2_10.42.orig.tar.gz":
            "c33b418e3b936ee3153de2c61cc638e7e4fe3156022a5c77d0711bcbb9d64f1f",
        "pcre2_10.42-1.diff.gz":
            "8267c3acacb04e8a077235f676187393e295443fc16ff46ddbe5f6476879c8cb"},
       build_system="autotools", top="pcre2-10.42", tests=("check",),
       outputs=(".libs/libpcre2-8.so.0.11.2", ".libs/libpcre2-posix.so.3.0.4",
                ".libs/pcre2test", ".libs/pcre2grep"),
       config_headers=("src/config.h",)),
    # xz-utils: release tarball with configure.
    _p("xz-utils", "5.4.1-1+deb12u1", {
        "xz-utils_5.4.1-1+deb12u1.dsc":
            "38f98e356f7e7e89b0920d39c55dd5f3d1a9f2684bff83c8b4890561e1832e94",
        "xz-utils_5.4.1.orig.tar.xz":
            "5d9827aa1875b21c288f78864bb26d2650b436ea8d2cad364e4921eb6266a5a5",
        "xz-utils_5.4.1.orig.tar.xz.asc":
            "4b0c7707114996092a5f75a98333de2102db83a27218e4903b8fb7c24a8d0233",
        "xz-utils_5.4.1-1+deb12u1.debian.tar.xz":
            "3e162db2b76480c7e157f4c2f6ff9a426fc023f262d4dc3287530b36e2843ebe"},
       build_system="autotools", top="xz-5.4.1",
       configure_args=("--disable-nls", "--disable-doc"), tests=("check",),
       outputs=("src/liblzma/.libs/liblzma.so.5.4.1", "src/xz/.libs/xz"),
       config_headers=("config.h",)),
    # libpng: release tarball with configure; links the system zlib.
    _p("libpng1.6", "1.6.39-2+deb12u5", {
        "libpng1.6_1.6.39-2+deb12u5.dsc":
            "7b86211030a34deb6b0a2cd7e1d9db0fe92443fd30cab537fb89b1e7f7c9f188",
        "libpng1.6_1.6.39.orig.tar.gz":
            "a00e9d2f2f664186e4202db9299397f851aea71b36a35e74910b8820e380d441",
        "libpng1.6_1.6.39-2+deb12u5.debian.tar.xz":
            "ab14906eda9fddf14cbb1e589b9ba7439c22e233dc3c5e3cf9356c9625565a82"},
       build_system="autotools", top="libpng-1.6.39", tests=("check",),
       outputs=(".libs/libpng16.so.16.39.0", ".libs/pngfix", ".libs/png-fix-itxt"),
       config_headers=("config.h", "pnglibconf.h")),
)


def by_name(name: str) -> Project:
    return _named.by_name(PROJECTS, name, "project")


def select(names: Optional[Sequence[str]] = None) -> List[Project]:
    """The projects named (all when None or empty)."""
    return _named.select(PROJECTS, names, "project")
