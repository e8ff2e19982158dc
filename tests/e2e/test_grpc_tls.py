"""TLS over gRPC with a self-signed certificate made here with openssl:
round trips in both modes, and TLS/plaintext mismatches are errors."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
import grpc_helpers as H  # noqa: E402

from build_components import built_components  # noqa: E402
from mlbridge import MLBridgeError, TimeoutError  # noqa: E402
from mlbridge.grpc import GrpcCompilerInterface, TlsFiles  # noqa: E402


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    openssl = shutil.which("openssl")
    assert openssl, "openssl is needed (apt-get install openssl)"
    d = tmp_path_factory.mktemp("tls")
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem")],
                   check=True, capture_output=True, timeout=60)
    return d / "cert.pem", d / "key.pem"


def test_inference_tls_round_trip_and_mismatch(procs, cert):
    crt, key = cert
    tls = TlsFiles(cert_file=str(crt), key_file=str(key))
    with GrpcCompilerInterface(timeout=20, tls=tls) as iface:
        ok = procs.spawn(H.compiler_cmd("--address", iface.address, "--scenario", "requests",
                                        "--count", 2, "--tls-root", crt), text=True)
        served = iface.serve(lambda o: 2 * int(o["i"][0]), sessions=1, timeout=20)
        lines, err = H.events(ok)
        assert served == 2
        assert [a["value"] for a in H.by_event(lines, "advice")] == [0, 2], err
        # A plaintext compiler cannot talk to the TLS model.
        plain = procs.spawn(H.compiler_cmd("--address", iface.address, "--scenario",
                                           "requests", "--connect-timeout-ms", 1000),
                            text=True)
        lines, _ = H.events(plain)
        assert H.by_event(lines, "error")[0]["code"] == "unavailable"
    # A TLS compiler cannot talk to a plaintext model.
    with GrpcCompilerInterface(timeout=20) as plain_model:
        p = procs.spawn(H.compiler_cmd("--address", plain_model.address, "--scenario",
                                       "requests", "--tls-root", crt,
                                       "--connect-timeout-ms", 1000), text=True)
        lines, _ = H.events(p)
        first = H.by_event(lines, "error")[0]
        assert first["code"] == "unavailable" and "TLS" in first["message"], first
        with pytest.raises(TimeoutError):  # nothing reached the model
            plain_model.evaluate(timeout=0.2)


@pytest.mark.parametrize("server", ["native", "grpcio"])
def test_inference_with_client_certificates(procs, cert, server):
    if server == "native" and not built_components()["grpc_python_core"]:
        pytest.skip("the build says component 'grpc_python_core' is off")
    crt, key = cert
    tls = TlsFiles(cert_file=str(crt), key_file=str(key), root_cert_file=str(crt),
                   require_client_cert=True)
    with GrpcCompilerInterface(timeout=20, tls=tls, server=server) as iface:
        ok = procs.spawn(H.compiler_cmd("--address", iface.address, "--scenario", "requests",
                                        "--count", 2, "--tls-root", crt, "--tls-cert", crt,
                                        "--tls-key", key), text=True)
        assert iface.serve(lambda o: 3 * int(o["i"][0]), sessions=1, timeout=20) == 2
        lines, err = H.events(ok)
        assert [a["value"] for a in H.by_event(lines, "advice")] == [0, 3], err
        # Without a client certificate the handshake fails.
        anon = procs.spawn(H.compiler_cmd("--address", iface.address, "--scenario",
                                          "requests", "--tls-root", crt,
                                          "--connect-timeout-ms", 1000), text=True)
        lines, _ = H.events(anon)
        assert H.by_event(lines, "error")[0]["code"] == "unavailable"
        with pytest.raises(TimeoutError):
            iface.evaluate(timeout=0.2)


def test_wrong_certificate_error_names_the_cause(procs, cert, tmp_path):
    """The compiler trusts another certificate than the server's: the
    error says the handshake / certificate verification failed."""
    crt, key = cert
    other = tmp_path / "other.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-keyout", str(tmp_path / "other.key"),
                    "-out", str(other)], check=True, capture_output=True, timeout=60)
    tls = TlsFiles(cert_file=str(crt), key_file=str(key))
    with GrpcCompilerInterface(timeout=20, tls=tls) as iface:
        p = procs.spawn(H.compiler_cmd("--address", iface.address, "--scenario", "requests",
                                       "--tls-root", other, "--connect-timeout-ms", 1000),
                        text=True)
        lines, _ = H.events(p)
    first = H.by_event(lines, "error")[0]
    assert first["code"] == "unavailable", first
    message = first["message"].lower()
    assert "handshake" in message or "certificate" in message, first


def test_training_tls_round_trip(procs, cert):
    crt, key = cert
    proc = procs.spawn(H.compiler_cmd("--mode", "training", "--scenario", "requests",
                                      "--count", 3, "--tls-cert", crt, "--tls-key", key),
                       text=True)
    address = H.listening_address(proc)
    with GrpcCompilerInterface(mode="training", compilers=[address], timeout=20,
                               tls=TlsFiles(root_cert_file=str(crt))) as iface:
        assert iface.serve(lambda o: 2 * int(o["i"][0])) == 3
    lines, err = H.events(proc)
    assert [a["value"] for a in H.by_event(lines, "advice")] == [0, 2, 4], err


def test_an_unusable_certificate_is_named_by_the_native_server(tmp_path):
    if not built_components()["grpc_python_core"]:
        pytest.skip("the build says component 'grpc_python_core' is off")
    bad = tmp_path / "bad.pem"
    bad.write_text("not a PEM file")
    with pytest.raises(MLBridgeError, match="TLS key or certificate is not usable"):
        GrpcCompilerInterface(tls=TlsFiles(cert_file=str(bad), key_file=str(bad)),
                              server="native")


def test_missing_certificate_is_a_clear_error(tmp_path):
    with pytest.raises(MLBridgeError, match="cannot read private key .*none.key"):
        GrpcCompilerInterface(tls=TlsFiles(cert_file=str(tmp_path / "none.pem"),
                                           key_file=str(tmp_path / "none.key")))
