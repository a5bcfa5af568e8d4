"""A company's certificate authority for tests: a root, server certificates it signs for the
names asked (a proxy's, a provider's that only the proxy can resolve), and client
certificates for mTLS; all PEM files in a folder, made with the `cryptography` package."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


class Authority:
    """A root certificate (`cert`, a PEM file) and the certificates it signs."""

    def __init__(self, directory: Path, name: str = "magi-code test company CA") -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.now(UTC)
        self._root = (
            x509.CertificateBuilder()
            .subject_name(self._name)
            .issuer_name(self._name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5))
            .not_valid_after(now + timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                critical=True,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False
            )
            .sign(self._key, hashes.SHA256())
        )
        slug = name.replace(" ", "-")
        self.cert = directory / f"{slug}.pem"
        self.cert.write_bytes(self._root.public_bytes(serialization.Encoding.PEM))

    def issue(self, stem: str, *names: str, client: bool = False) -> tuple[Path, Path]:
        """(certificate file, key file) signed by this root: for a server named `names`, or a
        client (`client=True`) called `stem`."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.now(UTC)
        usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, stem)]))
            .issuer_name(self._name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5))
            .not_valid_after(now + timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                critical=False,
            )
        )
        if names:
            alternatives = [x509.DNSName(name) for name in names]
            builder = builder.add_extension(
                x509.SubjectAlternativeName(alternatives), critical=False
            )
        cert = builder.sign(self._key, hashes.SHA256())
        cert_file, key_file = self.directory / f"{stem}.pem", self.directory / f"{stem}.key"
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        return cert_file, key_file
