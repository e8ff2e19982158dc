"""How each corpus library is built: the hand-written source of
``corpus/manifest.json``.

A recipe names a pinned crates.io crate that vendors a C or C++ library and
says how its translation units compile, following the crate's ``build.rs``
(its include directories and defines; codegen flags such as
``-ffunction-sections`` or ``-fvisibility`` are left out: the corpus measures
what ``-Oz`` does with the code, not a crate's link-time tuning). Paths are
relative to the unpacked crate. ``sources`` are glob patterns; ``exclude``
maps glob patterns to the reason they are left out (they are listed in the
manifest as skipped, never dropped silently). ``python -m mlbridge.corpus
manifest`` expands the patterns against the fetched crates, compiles every
unit and writes the manifest.

The split is by library and fixed here: models are trained on ``train``,
selected on ``validation``, and measured once on ``heldout``.
"""

from __future__ import annotations

#: Seeds of the csmith programs (train split only). The same csmith version
#: gives the same program for a seed; the manifest records each program's sha256.
CSMITH_SEEDS = tuple(range(1, 51))
CSMITH_MAX_FUNCS = 10

SPLITS = ("train", "validation", "heldout")

LIBRARIES = [
    # ---------------------------------------------------------------- train
    dict(name="zlib", crate="libz-sys", version="1.1.31",
         sha256="ff20308ecabd635a2dc1dd5834a86c462cca20efba1d5d3ddab1f8aea3455cb2",
         split="train", lang="c", std="gnu17", license="src/zlib/LICENSE", spdx="Zlib",
         includes=["src/zlib"], defines=["STDC", "_LARGEFILE64_SOURCE"],
         sources=["src/zlib/*.c"]),
    dict(name="bzip2", crate="bzip2-sys", version="0.1.13+1.0.8",
         sha256="225bff33b2141874fe80d71e07d6eec4f85c5c216453dd96388240f96e1acc14",
         split="train", lang="c", std="gnu17", license="bzip2-1.0.8/LICENSE",
         spdx="bzip2-1.0.6",
         includes=["bzip2-1.0.8"], defines=["_FILE_OFFSET_BITS=64", "BZ_NO_STDIO"],
         sources=["bzip2-1.0.8/blocksort.c", "bzip2-1.0.8/huffman.c",
                  "bzip2-1.0.8/crctable.c", "bzip2-1.0.8/randtable.c",
                  "bzip2-1.0.8/compress.c", "bzip2-1.0.8/decompress.c",
                  "bzip2-1.0.8/bzlib.c"]),
    dict(name="xz", crate="lzma-sys", version="0.1.20",
         sha256="5fda04ab3764e6cde78b9974eec4f779acaba7c4e84b36eca3cf77c581b85d27",
         split="train", lang="c", std="c99", license="xz-5.2/COPYING",
         spdx="0BSD AND LicenseRef-public-domain (liblzma)",
         includes=["xz-5.2/src/liblzma/api", "xz-5.2/src/liblzma/lzma",
                   "xz-5.2/src/liblzma/lz", "xz-5.2/src/liblzma/check",
                   "xz-5.2/src/liblzma/simple", "xz-5.2/src/liblzma/delta",
                   "xz-5.2/src/liblzma/common", "xz-5.2/src/liblzma/rangecoder",
                   "xz-5.2/src/common", "."],
         defines=["HAVE_CONFIG_H=1"],
         sources=[f"xz-5.2/src/liblzma/{d}/*.c" for d in
                  ("common", "lzma", "lz", "check", "delta", "rangecoder", "simple")]
         + ["xz-5.2/src/common/tuklib_cpucores.c", "xz-5.2/src/common/tuklib_physmem.c"],
         exclude={"xz-5.2/src/liblzma/check/crc*_small.c":
                  "not built by lzma-sys (the table-driven CRCs are used)",
                  "xz-5.2/src/liblzma/*/*tablegen.c":
                  "table generator programs, not part of the library"}),
    dict(name="zstd", crate="zstd-sys", version="2.1.3+zstd.1.5.7",
         sha256="f729a06d0257428fd9d997ac8db7e1407bd0262ab016b085b36bc52957c0052d",
         split="train", lang="c", std="gnu17", license="zstd/LICENSE",
         spdx="BSD-3-Clause OR GPL-2.0-only",
         includes=["zstd/lib", "zstd/lib/common", "zstd/lib/legacy"],
         defines=["ZSTD_LIB_DEPRECATED=0", "XXH_PRIVATE_API", "ZSTDLIB_VISIBILITY=",
                  "ZDICTLIB_VISIBILITY=", "ZSTDERRORLIB_VISIBILITY=",
                  "ZSTD_LEGACY_SUPPORT=1"],
         sources=["zstd/lib/common/*.c", "zstd/lib/compress/*.c",
                  "zstd/lib/decompress/*.c", "zstd/lib/dictBuilder/*.c",
                  "zstd/lib/legacy/*.c"],
         exclude={"zstd/lib/common/xxhash.c":
                  "not built by zstd-sys (XXH_PRIVATE_API inlines it in the headers)"}),

    dict(name="lua", crate="lua-src", version="551.1.0",
         sha256="41d22b201501a536c0f5a96c7589b268b559172b20fb029064434e38ddcecb1f",
         split="train", lang="c", std="gnu17", license="LICENSE", spdx="MIT",
         includes=[], defines=["LUA_USE_LINUX"],
         # Two of the five Lua versions the crate ships (5.2, 5.3 and 5.5 are
         # close relatives of these).
         sources=["lua-5.1.5/*.c", "lua-5.4.9/*.c"],
         unit_flags={"lua-5.4.9/*.c": ["-DLUA_COMPAT_5_3"]}),
    dict(name="libgit2", crate="libgit2-sys", version="0.18.8+1.9.7",
         sha256="7f7c568b25d7489bc3fb2988ed69ab111d2944d2f5fec3d5c987fe545ea97b50",
         split="train", lang="c", std="gnu17", license="libgit2/COPYING",
         spdx="GPL-2.0-only WITH GCC-exception-2.0", deps=["zlib"],
         # Default features (no https, no ssh): the built-in SHA-256.
         includes=["mlbridge-generated", "libgit2/include", "libgit2/src/libgit2",
                   "libgit2/src/util", "libgit2/deps/llhttp", "libgit2/deps/xdiff",
                   "libgit2/deps/pcre2"],
         extra_flags=["-I{src:zlib}/src/zlib"],
         defines=["GIT_REGEX_BUILTIN=1", "PCRE2_STATIC", "PCRE2_EXPORT=",
                  "PCRE2_EXP_DECL=", "PCRE2_EXP_DEFN=", "PCRE2_CODE_UNIT_WIDTH=8",
                  "SUPPORT_PCRE2_8=1", "SUPPORT_UNICODE=1", "LINK_SIZE=2",
                  "HEAP_LIMIT=20000000", "MATCH_LIMIT=10000000",
                  "MATCH_LIMIT_DEPTH=MATCH_LIMIT", "MAX_VARLOOKBEHIND=255",
                  "NEWLINE_DEFAULT=2", "PARENS_NEST_LIMIT=250", "MAX_NAME_SIZE=128",
                  "MAX_NAME_COUNT=10000", "SHA1DC_NO_STANDARD_INCLUDES=1",
                  'SHA1DC_CUSTOM_INCLUDE_SHA1_C="common.h"',
                  'SHA1DC_CUSTOM_INCLUDE_UBC_CHECK_C="common.h"'],
         generated={"mlbridge-generated/git2_features.h": {"text": (
             "#ifndef INCLUDE_features_h\n#define INCLUDE_features_h\n"
             "#define GIT_THREADS 1\n#define GIT_TRACE 1\n#define GIT_HTTPPARSER_BUILTIN 1\n"
             "#define GIT_USE_NSEC 1\n#define GIT_IO_POLL 1\n#define GIT_IO_SELECT 1\n"
             "#define GIT_USE_STAT_MTIM 1\n#define GIT_ARCH_64 1\n"
             "#define GIT_SHA1_COLLISIONDETECT 1\n#define GIT_SHA256_BUILTIN 1\n"
             "#endif\n")}},
         sources=["libgit2/src/libgit2/*.c", "libgit2/src/util/*.c",
                  "libgit2/src/libgit2/transports/*.c", "libgit2/src/libgit2/streams/*.c",
                  "libgit2/deps/llhttp/*.c", "libgit2/deps/xdiff/*.c",
                  "libgit2/deps/pcre2/*.c",
                  "libgit2/src/util/allocators/failalloc.c",
                  "libgit2/src/util/allocators/stdalloc.c", "libgit2/src/util/unix/*.c",
                  "libgit2/src/util/hash/collisiondetect.c",
                  "libgit2/src/util/hash/sha1dc/sha1.c",
                  "libgit2/src/util/hash/sha1dc/ubc_check.c",
                  "libgit2/src/util/hash/builtin.c",
                  "libgit2/src/util/hash/rfc6234/sha224-256.c"],
         exclude={"libgit2/deps/pcre2/*.c":
                  "a copy of PCRE2, which is the pcre2 library of the validation split"}),
    dict(name="curl", crate="curl-sys", version="0.4.91+curl-8.22.0",
         sha256="cd39579123e45bf762716bb893d43886ed1cabe6289455be29a4f1d4e37afb06",
         split="train", lang="c", std="gnu17", license="curl/COPYING", spdx="curl",
         deps=["zlib"],
         # curl-sys without its default TLS / HTTP/2 features (no OpenSSL or
         # nghttp2 headers here), with the unix defines of its build.rs.
         includes=["curl/lib", "curl/include"],
         extra_flags=["-I{src:zlib}/src/zlib"],
         defines=["BUILDING_LIBCURL", "CURL_DISABLE_DICT", "CURL_DISABLE_GOPHER",
                  "CURL_DISABLE_IMAP", "CURL_DISABLE_LDAP", "CURL_DISABLE_LDAPS",
                  "CURL_DISABLE_POP3", "CURL_DISABLE_RTSP", "CURL_DISABLE_SMB",
                  "CURL_DISABLE_SMTP", "CURL_DISABLE_TELNET", "CURL_DISABLE_TFTP",
                  "CURL_STATICLIB", "ENABLE_IPV6", "HAVE_SOCKADDR_IN6_SIN6_SCOPE_ID",
                  "HAVE_ASSERT_H", 'CURL_OS="unknown"', "HAVE_ZLIB_H", "HAVE_LONGLONG",
                  "HAVE_LIBZ", "HAVE_BOOL_T", "HAVE_STDBOOL_H", "HAVE_STDINT_H",
                  "USE_RESOLV_THREADED", "HAVE_GETADDRINFO", "HAVE_GETPEERNAME",
                  "HAVE_GETSOCKNAME", "CURL_DISABLE_NTLM", "CURL_DISABLE_FTP",
                  "RECV_TYPE_ARG1=int", "HAVE_PTHREAD_H", "HAVE_ARPA_INET_H",
                  "HAVE_ERRNO_H", "HAVE_FCNTL_H", "HAVE_NETDB_H", "HAVE_NETINET_IN_H",
                  "HAVE_NETINET_TCP_H", "HAVE_POLL_H", "HAVE_FCNTL_O_NONBLOCK",
                  "HAVE_SYS_SELECT_H", "HAVE_SYS_STAT_H", "HAVE_SYS_TIME_H",
                  "HAVE_UNISTD_H", "HAVE_RECV", "HAVE_SELECT", "HAVE_SEND", "HAVE_SOCKET",
                  "HAVE_STERRROR_R", "HAVE_SOCKETPAIR", "HAVE_STRUCT_TIMEVAL",
                  "HAVE_SYS_UN_H", "HAVE_THREADS_POSIX", "USE_UNIX_SOCKETS",
                  "RECV_TYPE_ARG2=void*", "RECV_TYPE_ARG3=size_t", "RECV_TYPE_ARG4=int",
                  "RECV_TYPE_RETV=ssize_t", "SEND_QUAL_ARG2=const", "SEND_TYPE_ARG1=int",
                  "SEND_TYPE_ARG2=void*", "SEND_TYPE_ARG3=size_t", "SEND_TYPE_ARG4=int",
                  "SEND_TYPE_RETV=ssize_t", "SIZEOF_CURL_OFF_T=8", "SIZEOF_INT=4",
                  "SIZEOF_SHORT=2", "HAVE_CLOCK_GETTIME_MONOTONIC", "HAVE_GETTIMEOFDAY",
                  "HAVE_POLL_FINE", "SIZEOF_SSIZE_T=8", "SIZEOF_SIZE_T=8",
                  "SIZEOF_LONG=8"],
         sources=[f"curl/lib/{f}.c" for f in (
             "altsvc api bufq bufref cf-h1-proxy cf-haproxy cf-https-connect cf-ip-happy "
             "cf-recvbuf cf-setup cf-socket cfilters conncache connect content_encoding "
             "cookie creds cshutdn curl_addrinfo curl_ed25519 curl_fopen curl_get_line "
             "curl_memrchr curl_range curl_sha512_256 curl_share curl_threads curl_trc "
             "curlx/base64 curlx/basename curlx/dynbuf curlx/fopen curlx/inet_ntop "
             "curlx/inet_pton curlx/nonblock curlx/snprintf curlx/strcopy curlx/strdup "
             "curlx/strerr curlx/strparse curlx/timediff curlx/timeval curlx/wait "
             "curlx/warnless cw-out cw-pause dict dynhds easy escape file fileinfo "
             "formdata ftp getenv getinfo gopher hash headers hmac hsts http http1 "
             "http_aws_sigv4 http_chunks http_digest http_httpsig http_proxy idn if2ip "
             "imap ldap llist macos md5 mime mprintf mqtt multi multi_ev multi_ntfy netrc "
             "parsedate peer pop3 progress protocol proxy rand ratelimit request rtsp "
             "select sendf setopt sha256 slist smb smtp socketpair socks splay strcase "
             "strequal strerror telnet tftp thrdpool thrdqueue transfer uint-bset "
             "uint-hash uint-hashset uint-spbset uint-table url urlapi vauth/digest "
             "vauth/vauth vdns/asyn-base vdns/asyn-thrdd vdns/cf-dns vdns/dnscache "
             "vdns/doh vdns/hostip vdns/hostip6 version vquic/vquic-tls vquic/vquic "
             "vssh/vssh vtls/hostcheck vtls/keylog vtls/vtls vtls/vtls_config "
             "vtls/vtls_scache ws").split()]),
    dict(name="opus", crate="audiopus_sys", version="0.2.2",
         sha256="62314a1546a2064e033665d658e88c620a62904be945f8147e6b16c3db9f8651",
         split="train", lang="c", std="gnu17", license="opus/COPYING", spdx="BSD-3-Clause",
         # audiopus_sys builds opus with its CMake files; these are the
         # floating-point library's sources and defines from them.
         includes=["opus/include", "opus/celt", "opus/silk", "opus/silk/float"],
         defines=["OPUS_BUILD", "VAR_ARRAYS", "HAVE_LRINTF", "HAVE_LRINT"],
         sources=["opus/celt/*.c", "opus/silk/*.c", "opus/silk/float/*.c", "opus/src/*.c"],
         exclude={"opus/celt/opus_custom_demo.c": "demo program, not part of the library",
                  "opus/src/*_demo.c": "demo program, not part of the library",
                  "opus/src/opus_compare.c": "test tool, not part of the library"}),
    dict(name="libwebp", crate="libwebp-sys", version="0.14.4",
         sha256="6b3a87b44e34d17161e4f17d92a463d596cb13825dcd1758ed18fd3a721e189c",
         split="train", lang="c", std="gnu17", license="vendor/COPYING", spdx="BSD-3-Clause",
         includes=["vendor"],
         defines=["NDEBUG=1", "_THREAD_SAFE=1", "WEBP_USE_THREAD=1", "WEBP_HAVE_SSE2=1"],
         sources=["vendor/src/**/*.c", "vendor/sharpyuv/**/*.c"]),
    dict(name="oniguruma", crate="onig_sys", version="69.9.3",
         sha256="1e68317604e77e53b85896388e1a803c1d21b74c899ec9e5e1112db90735edd7",
         split="train", lang="c", std="gnu17", license="oniguruma/COPYING",
         spdx="BSD-2-Clause",
         includes=["mlbridge-generated", "oniguruma/src"],
         defines=["HAVE_UNISTD_H=1", "HAVE_SYS_TYPES_H=1", "HAVE_SYS_TIME_H=1",
                  "HAVE_ALLOCA_H=1"],
         generated={"mlbridge-generated/config.h": {"text": (
             "#define HAVE_PROTOTYPES 1\n#define STDC_HEADERS 1\n#define HAVE_STRING_H 1\n"
             "#define HAVE_STDARG_H 1\n#define HAVE_STDLIB_H 1\n#define HAVE_LIMITS_H 1\n"
             "#define HAVE_INTTYPES_H 1\n#define SIZEOF_INT 4\n#define SIZEOF_SHORT 2\n"
             "#define SIZEOF_LONG 8\n#define SIZEOF_VOIDP 8\n#define SIZEOF_LONG_LONG 8\n")}},
         sources=[f"oniguruma/src/{f}.c" for f in (
             "regexec regerror regparse regext regcomp reggnu regenc regsyntax regtrav "
             "regversion st onig_init unicode ascii utf8 utf16_be utf16_le utf32_be "
             "utf32_le euc_jp sjis iso8859_1 iso8859_2 iso8859_3 iso8859_4 iso8859_5 "
             "iso8859_6 iso8859_7 iso8859_8 iso8859_9 iso8859_10 iso8859_11 iso8859_13 "
             "iso8859_14 iso8859_15 iso8859_16 euc_tw euc_kr big5 gb18030 koi8_r cp1251 "
             "euc_jp_prop sjis_prop unicode_unfold_key unicode_fold1_key "
             "unicode_fold2_key unicode_fold3_key regposix regposerr").split()]),
    dict(name="freetype", crate="freetype-sys", version="0.23.0",
         sha256="eab537ce43cab850c64b4cdc390ce7e4f47f877485ddc323208e268280c308ae",
         split="train", lang="c", std="gnu17", license="freetype2/LICENSE.TXT",
         spdx="FTL OR GPL-2.0-or-later",
         includes=[".", "freetype2/include", "libpng"],
         defines=["FT2_BUILD_LIBRARY", "FT_CONFIG_OPTION_USE_PNG"],
         generated={"libpng/pnglibconf.h": {"from": "libpng/scripts/pnglibconf.h.prebuilt"}},
         sources=[f"freetype2/src/{f}.c" for f in (
             "autofit/autofit base/ftbase base/ftbbox base/ftbdf base/ftbitmap base/ftcid "
             "base/ftdebug base/ftfstype base/ftgasp base/ftglyph base/ftgxval base/ftinit "
             "base/ftmm base/ftotval base/ftpatent base/ftpfr base/ftstroke base/ftsynth "
             "base/ftsystem base/fttype1 base/ftwinfnt bdf/bdf bzip2/ftbzip2 cache/ftcache "
             "cff/cff cid/type1cid gzip/ftgzip lzw/ftlzw pcf/pcf pfr/pfr psaux/psaux "
             "pshinter/pshinter psnames/psnames raster/raster sdf/sdf svg/svg sfnt/sfnt "
             "smooth/smooth truetype/truetype type1/type1 type42/type42 "
             "winfonts/winfnt").split()]),
    dict(name="libpng", crate="freetype-sys", version="0.23.0",
         sha256="eab537ce43cab850c64b4cdc390ce7e4f47f877485ddc323208e268280c308ae",
         split="train", lang="c", std="gnu17", license="libpng/LICENSE",
         spdx="libpng-2.0", deps=["zlib"],
         includes=["libpng"], extra_flags=["-I{src:zlib}/src/zlib"],
         generated={"libpng/pnglibconf.h": {"from": "libpng/scripts/pnglibconf.h.prebuilt"}},
         sources=[f"libpng/{f}.c" for f in (
             "png pngerror pngget pngmem pngpread pngread pngrio pngrtran pngrutil pngset "
             "pngtrans pngwio pngwrite pngwtran pngwutil").split()]),
    dict(name="meshoptimizer", crate="meshopt", version="0.7.0",
         sha256="a403c16e3ca5752600e1d4c5ba3ba2a6496f407ded66e767f05279514363f461",
         split="train", lang="c++", std="c++11", license="README.md",
         spdx="MIT (meshoptimizer; notice in the crate's README and sources)",
         includes=["src"], defines=["NDEBUG"],
         sources=["vendor/src/*.cpp", "src/clusterlod.cpp"]),
    dict(name="spirv-cross", crate="spirv_cross", version="0.23.1",
         sha256="60647fadbf83c4a72f0d7ea67a7ca3a81835cf442b8deae5c134c3e0055b2e14",
         split="train", lang="c++", std="c++14",
         license="src/vendor/SPIRV-Cross/LICENSE", spdx="Apache-2.0",
         includes=[], defines=["SPIRV_CROSS_EXCEPTIONS_TO_ASSERTIONS",
                               "SPIRV_CROSS_WRAPPER_NO_EXCEPTIONS",
                               "SPIRV_CROSS_WRAPPER_GLSL", "SPIRV_CROSS_WRAPPER_HLSL",
                               "SPIRV_CROSS_WRAPPER_MSL"],
         sources=["src/wrapper.cpp"] + [f"src/vendor/SPIRV-Cross/spirv_{f}.cpp" for f in (
             "cfg cross cross_parsed_ir parser cross_util glsl hlsl msl").split()]),
    dict(name="zxing-cpp", crate="zxing-cpp", version="0.5.3",
         sha256="a60abe279615a2f29efb0f28c7750f871424f2d70662409951a34479daae7a6b",
         split="train", lang="c++", std="c++20", license="core/src/ZXingCpp.h",
         spdx="Apache-2.0 (SPDX notice in every source file; no licence file in the crate)",
         # zxing-cpp builds the library with its CMake files (readers and
         # writers on, bundled zint); the corpus keeps the C++ core.
         includes=["core/src", "core/src/libzint", "core/src/libzueci", "mlbridge-generated"],
         defines=["ZXING_INTERNAL"],
         generated={"mlbridge-generated/Version.h": {
             "from": "core/Version.h.in",
             "replace": {"#cmakedefine ZXING_READERS": "#define ZXING_READERS",
                         "#cmakedefine ZXING_WRITERS": "#define ZXING_WRITERS",
                         "#cmakedefine01 ZXING_ENABLE_1D": "#define ZXING_ENABLE_1D 1",
                         "#cmakedefine01 ZXING_ENABLE_AZTEC": "#define ZXING_ENABLE_AZTEC 1",
                         "#cmakedefine01 ZXING_ENABLE_DATAMATRIX":
                             "#define ZXING_ENABLE_DATAMATRIX 1",
                         "#cmakedefine01 ZXING_ENABLE_MAXICODE":
                             "#define ZXING_ENABLE_MAXICODE 1",
                         "#cmakedefine01 ZXING_ENABLE_PDF417": "#define ZXING_ENABLE_PDF417 1",
                         "#cmakedefine01 ZXING_ENABLE_QRCODE": "#define ZXING_ENABLE_QRCODE 1",
                         "#cmakedefine ZXING_EXPERIMENTAL_API": "",
                         "#cmakedefine ZXING_USE_ZINT": "#define ZXING_USE_ZINT",
                         "@PROJECT_VERSION_MAJOR@": "3", "@PROJECT_VERSION_MINOR@": "1",
                         "@PROJECT_VERSION_PATCH@": "1", "@ZXING_VERSION_SUFFIX@": ""}}},
         sources=["core/src/*.cpp", "core/src/aztec/*.cpp", "core/src/datamatrix/*.cpp",
                  "core/src/maxicode/*.cpp", "core/src/oned/*.cpp", "core/src/pdf417/*.cpp",
                  "core/src/qrcode/*.cpp"],
         exclude={"core/src/ZXingCpp.cpp": "experimental API (off in zxing-cpp's build)"}),
    # ----------------------------------------------------------- validation
    dict(name="lz4", crate="lz4-sys", version="1.11.1+lz4-1.10.0",
         sha256="6bd8c0d6c6ed0cd30b3652886bb8711dc4bb01d637a68105a3d5158039b418e6",
         split="validation", lang="c", std="gnu17", license="liblz4/lib/LICENSE",
         spdx="BSD-2-Clause",
         includes=["liblz4/lib"], defines=[],
         sources=["liblz4/lib/lz4.c", "liblz4/lib/lz4frame.c", "liblz4/lib/lz4hc.c",
                  "liblz4/lib/xxhash.c"]),

    dict(name="pcre2", crate="pcre2-sys", version="0.2.10",
         sha256="18b9073c1a2549bd409bf4a32c94d903bb1a09bf845bc306ae148897fa0760a4",
         split="validation", lang="c", std="gnu17", license="COPYING",
         spdx="BSD-3-Clause WITH PCRE2-exception",
         includes=["upstream/src", "upstream/deps", "upstream/include"],
         defines=["PCRE2_CODE_UNIT_WIDTH=8", "HAVE_STDLIB_H=1", "HAVE_MEMMOVE=1",
                  "HAVE_CONFIG_H=1", "PCRE2_STATIC=1", "STDC_HEADERS=1",
                  "SUPPORT_PCRE2_8=1", "SUPPORT_UNICODE=1", "SUPPORT_JIT=1"],
         sources=["upstream/src/*.c"],
         exclude={"upstream/src/pcre2_jit_match.c": "included by pcre2_jit_compile.c",
                  "upstream/src/pcre2_jit_misc.c": "included by pcre2_jit_compile.c",
                  "upstream/src/pcre2_ucptables.c": "included by pcre2_tables.c"}),
    dict(name="lcms2", crate="lcms2-sys", version="4.0.7",
         sha256="264db0b78119c5a37d78bb41fb355daab29b3b29430b53cd92e3da51f0ab06cc",
         split="validation", lang="c", std="gnu17", license="vendor/LICENSE", spdx="MIT",
         includes=["vendor/include"], defines=["NDEBUG=1"],
         sources=["vendor/src/*.c"]),
    dict(name="recastnavigation", crate="recastnavigation-sys", version="1.0.3",
         sha256="f0fe62a580b3da03673e84849beb8c93ec8e7d1667da3f2eb46508b23b40a1af",
         split="validation", lang="c++", std="c++11",
         license="recastnavigation/License.txt", spdx="Zlib",
         # recastnavigation-sys builds with the library's CMake files: each
         # module's Include folder, no extra defines.
         includes=[f"recastnavigation/{m}/Include" for m in
                   ("Recast", "Detour", "DetourCrowd", "DetourTileCache")],
         defines=[],
         sources=[f"recastnavigation/{m}/Source/*.cpp" for m in
                  ("Recast", "Detour", "DetourCrowd", "DetourTileCache")]),
    dict(name="libdeflate", crate="libdeflate-sys", version="1.26.1",
         sha256="d7870e5fbd2766179a937c725fb11f4ca0ef025d982beb61bd3ce755425bd19c",
         split="validation", lang="c", std="gnu17", license="libdeflate/COPYING", spdx="MIT",
         includes=["libdeflate"], defines=[],
         sources=[f"libdeflate/lib/{f}.c" for f in (
             "arm/cpu_features x86/cpu_features adler32 crc32 deflate_compress "
             "deflate_decompress gzip_compress gzip_decompress utils zlib_compress "
             "zlib_decompress").split()]),
    # -------------------------------------------------------------- heldout
    dict(name="sqlite", crate="libsqlite3-sys", version="0.40.0",
         sha256="b06e69070b7e12262b0cd90832f0a7396f142a2b330181255562decf9f0c6215",
         split="heldout", lang="c", std="gnu17", license="sqlite3/sqlite3.c",
         spdx="blessing (public domain notice at the top of sqlite3.c)",
         includes=["sqlite3"],
         defines=["SQLITE_CORE", "SQLITE_DEFAULT_FOREIGN_KEYS=1", "SQLITE_ENABLE_API_ARMOR",
                  "SQLITE_ENABLE_COLUMN_METADATA", "SQLITE_ENABLE_DBSTAT_VTAB",
                  "SQLITE_ENABLE_FTS3", "SQLITE_ENABLE_FTS3_PARENTHESIS",
                  "SQLITE_ENABLE_FTS5", "SQLITE_ENABLE_JSON1",
                  "SQLITE_ENABLE_LOAD_EXTENSION=1", "SQLITE_ENABLE_RTREE",
                  "SQLITE_ENABLE_STAT4", "SQLITE_SOUNDEX", "SQLITE_THREADSAFE=1",
                  "SQLITE_USE_URI", "HAVE_USLEEP=1", "HAVE_ISNAN",
                  "_POSIX_THREAD_SAFE_FUNCTIONS", "HAVE_LOCALTIME_R"],
         sources=["sqlite3/sqlite3.c"]),

    dict(name="brotli", crate="brotli-sys", version="0.3.2",
         sha256="4445dea95f4c2b41cde57cc9fee236ae4dbae88d8fcbdb4750fc1bb5d86aaecd",
         split="heldout", lang="c", std="gnu17", license="src/lib.rs",
         spdx="MIT (brotli; the crate ships no licence file)",
         includes=["brotli/include"], defines=[],
         sources=["brotli/common/dictionary.c", "brotli/dec/*.c", "brotli/enc/*.c"]),
    dict(name="openjpeg", crate="openjpeg-sys", version="1.0.12",
         sha256="92682cb92e7b01e2c020cf8ec12f3374558924bb24621df1112d8a7c93d419ef",
         split="heldout", lang="c", std="gnu17", license="vendor/LICENSE",
         spdx="BSD-2-Clause",
         includes=["vendor/src/lib/openjp2", "config"],
         defines=["OPJ_HAVE_POSIX_MEMALIGN=1", "MUTEX_pthread=1", "OPJ_STATIC=1"],
         sources=[f"vendor/src/lib/openjp2/{f}.c" for f in (
             "thread bio cio dwt event ht_dec image invert j2k jp2 mct mqc openjpeg "
             "opj_clock pi t1 t2 tcd tgt function_list opj_malloc sparse_array").split()]),
    dict(name="secp256k1", crate="secp256k1-sys", version="0.14.1",
         sha256="f6b2992d4a3cd244539a7d5d0966aadbe5ca7fb868a5d7e38c29499b9e709bbd",
         split="heldout", lang="c", std="gnu17", license="depend/secp256k1/COPYING",
         spdx="MIT",
         includes=["depend/secp256k1", "depend/secp256k1/include", "depend/secp256k1/src"],
         defines=["ENABLE_MODULE_ECDH=1", "ENABLE_MODULE_SCHNORRSIG=1",
                  "ENABLE_MODULE_EXTRAKEYS=1", "ENABLE_MODULE_ELLSWIFT=1",
                  "ENABLE_MODULE_MUSIG=1", "printf(...)=", "ECMULT_WINDOW_SIZE=15",
                  "COMB_BLOCKS=43", "COMB_TEETH=6", "USE_EXTERNAL_DEFAULT_CALLBACKS=1",
                  "ENABLE_MODULE_RECOVERY=1"],
         sources=["depend/secp256k1/contrib/lax_der_parsing.c",
                  "depend/secp256k1/src/precomputed_ecmult_gen.c",
                  "depend/secp256k1/src/precomputed_ecmult.c",
                  "depend/secp256k1/src/secp256k1.c"]),
    dict(name="snappy", crate="snappy_src", version="0.2.7+snappy.1.3.1",
         sha256="10b04989c0e9be7ceeb4a8db3a288fd37346596ffe09fc83ee327e91ae029c65",
         split="heldout", lang="c++", std="c++14", license="snappy/COPYING",
         spdx="BSD-3-Clause",
         includes=["snappy", "mlbridge-generated"], defines=[],
         generated={"mlbridge-generated/snappy-stubs-public.h": {
             "from": "snappy/snappy-stubs-public.h.in",
             "replace": {"${HAVE_SYS_UIO_H_01}": "1", "${PROJECT_VERSION_MAJOR}": "1",
                         "${PROJECT_VERSION_MINOR}": "3", "${PROJECT_VERSION_PATCH}": "1"}}},
         sources=["snappy/snappy-c.cc", "snappy/snappy-sinksource.cc",
                  "snappy/snappy-stubs-internal.cc", "snappy/snappy.cc"]),
    dict(name="leveldb", crate="leveldb-sys", version="2.0.9",
         sha256="9dd94a4d0242a437e5e41a27c782b69a624469ca1c4d1e5cb3c337f74a8031d4",
         split="heldout", lang="c++", std="c++11", license="deps/leveldb-1.22/LICENSE",
         spdx="BSD-3-Clause",
         # leveldb-sys builds with leveldb's CMake files (without snappy here).
         includes=["deps/leveldb-1.22", "deps/leveldb-1.22/include", "mlbridge-generated"],
         defines=["LEVELDB_PLATFORM_POSIX=1", "LEVELDB_COMPILE_LIBRARY"],
         generated={"mlbridge-generated/port/port_config.h": {"text": (
             "#ifndef STORAGE_LEVELDB_PORT_PORT_CONFIG_H_\n"
             "#define STORAGE_LEVELDB_PORT_PORT_CONFIG_H_\n"
             "#define HAVE_FDATASYNC 1\n#define HAVE_FULLFSYNC 0\n#define HAVE_CRC32C 0\n"
             "#define HAVE_SNAPPY 0\n#define LEVELDB_IS_BIG_ENDIAN 0\n#endif\n")}},
         sources=["deps/leveldb-1.22/db/*.cc", "deps/leveldb-1.22/table/*.cc",
                  "deps/leveldb-1.22/util/*.cc",
                  "deps/leveldb-1.22/helpers/memenv/memenv.cc"],
         exclude={"deps/leveldb-1.22/*_test.cc": "test, not part of the library",
                  "deps/leveldb-1.22/*_bench.cc": "benchmark, not part of the library",
                  "deps/leveldb-1.22/util/testharness.cc": "test support",
                  "deps/leveldb-1.22/util/testutil.cc": "test support",
                  "deps/leveldb-1.22/util/env_windows.cc": "Windows only",
                  "deps/leveldb-1.22/db/leveldbutil.cc": "command-line tool"}),
    dict(name="harfbuzz", crate="harfbuzz-sys", version="0.8.0",
         sha256="b13f1cead31867a0d5b5e8905c262bc02b77701b8cd45ef402988f33745f9b7c",
         split="heldout", lang="c++", std="c++11", license="harfbuzz/COPYING",
         spdx="MIT-Modern-Variant",
         # harfbuzz-sys compiles the amalgamation harfbuzz.cc; the corpus
         # compiles the files it includes one by one, as harfbuzz's own build does.
         includes=["harfbuzz/src"], defines=["HAVE_PTHREAD=1"],
         sources=["harfbuzz/src/harfbuzz.cc"] + [f"harfbuzz/src/{f}.cc" for f in (
             "hb-aat-layout hb-aat-map hb-blob hb-buffer-serialize hb-buffer-verify hb-buffer hb-common hb-coretext hb-directwrite hb-draw hb-face-builder hb-face hb-fallback-shape hb-font hb-ft hb-gdi hb-glib hb-graphite2 hb-map hb-number hb-ot-cff1-table hb-ot-cff2-table hb-ot-color hb-ot-face hb-ot-font hb-ot-layout hb-ot-map hb-ot-math hb-ot-meta hb-ot-metrics hb-ot-name hb-ot-shape-fallback hb-ot-shape-normalize hb-ot-shape hb-ot-shaper-arabic hb-ot-shaper-default hb-ot-shaper-hangul hb-ot-shaper-hebrew hb-ot-shaper-indic-table hb-ot-shaper-indic hb-ot-shaper-khmer hb-ot-shaper-myanmar hb-ot-shaper-syllabic hb-ot-shaper-thai hb-ot-shaper-use hb-ot-shaper-vowel-constraints hb-ot-tag hb-ot-var hb-outline hb-paint-extents hb-paint hb-set hb-shape-plan hb-shape hb-shaper hb-static hb-style hb-ucd hb-unicode hb-uniscribe hb-wasm-api hb-wasm-shape").split()],
         exclude={"harfbuzz/src/harfbuzz.cc": "amalgamation of the other units (compiled "
                                              "one by one here)",
                  **{f"harfbuzz/src/hb-{p}.cc": "platform integration harfbuzz-sys does not "
                                                "enable on Linux (compiles to nothing)"
                     for p in ("coretext", "directwrite", "ft", "gdi", "glib", "graphite2",
                               "uniscribe", "wasm-api", "wasm-shape")}}),
]
