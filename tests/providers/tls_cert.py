"""A self-signed certificate for `localhost` (and no IP address), for local https servers:
made with the `cryptography` package when it is installed, else with `openssl req`."""

import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path


def self_signed(directory: Path) -> tuple[Path, Path] | None:
    """(certificate file, key file) in `directory`, or None if nothing here can make them."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    try:
        _with_cryptography(cert, key)
    except ImportError:
        openssl = shutil.which("openssl")
        if openssl is None:
            return None
        request = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"]
        subject = ["-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"]
        out = ["-keyout", str(key), "-out", str(cert)]
        subprocess.run([openssl, *request, *subject, *out], check=True, capture_output=True)
    return cert, key


def _with_cryptography(cert_file: Path, key_file: Path) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
