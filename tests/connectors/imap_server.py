"""A real IMAP server for the tests: Dovecot (Debian's dovecot-imapd), started on free local ports.

`dovecot_server()` starts one instance with its own configuration, a passwd-file user
`ana` / `secret`, Maildir storage in a temp folder, a plain IMAP port (STARTTLS offered) and an
IMAPS port with a self-signed certificate; `stop()` ends it. When Dovecot is not installed,
`DOVECOT` is None and the IMAP tests are skipped with the install hint (`.ci/run` installs it).
"""
from __future__ import annotations

import datetime as dt
import grp
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

DOVECOT = shutil.which("dovecot") or (Path("/usr/sbin/dovecot") if Path("/usr/sbin/dovecot").exists() else None)
USER, PASSWORD = "ana", "secret"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _self_signed(cert: Path, key: Path) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    private = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = dt.datetime.now(dt.timezone.utc)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(private.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(days=1))
                   .not_valid_after(now + dt.timedelta(days=2))
                   .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
                   .sign(private, hashes.SHA256()))
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key.write_bytes(private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    key.chmod(0o600)


@dataclass
class DovecotServer:
    base: Path
    port: int
    ssl_port: int
    cert: Path
    user: str = USER
    password: str = PASSWORD
    host: str = "127.0.0.1"

    process: subprocess.Popen | None = None

    def stop(self) -> None:
        """Stop the master process (it stops its children) and wait for it."""
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        shutil.rmtree(self.base, ignore_errors=True)


def dovecot_server() -> DovecotServer:
    """Start Dovecot; returns once the IMAP port answers. Raises RuntimeError with its log otherwise.

    Its folder is a fresh one under the system temp folder (pytest's are private to the test
    user, and Dovecot's unprivileged processes must read the passwd file); stop() removes it.
    """
    base = Path(tempfile.mkdtemp(prefix="airweave-dovecot-"))
    base.chmod(0o755)
    for sub in ("run", "state", "mail", "home"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:  # Dovecot's own unprivileged users (made by the Debian package)
        internal, login, mail_user = "dovecot", "dovenull", "dovecot"
        uid, gid = pwd.getpwnam(mail_user).pw_uid, grp.getgrnam(mail_user).gr_gid
        for sub in ("mail", "home"):
            shutil.chown(base / sub, uid, gid)
    else:
        internal = login = pwd.getpwuid(os.getuid()).pw_name
        uid, gid = os.getuid(), os.getgid()
    (base / "users").write_text(f"{USER}:{{PLAIN}}{PASSWORD}\n")
    (base / "users").chmod(0o644)
    cert, key = base / "cert.pem", base / "key.pem"
    _self_signed(cert, key)
    port, ssl_port = _free_port(), _free_port()
    (base / "dovecot.conf").write_text(f"""
base_dir = {base}/run
state_dir = {base}/state
log_path = {base}/dovecot.log
instance_name = airweave-test-{port}
protocols = imap
listen = 127.0.0.1
ssl = yes
ssl_cert = <{cert}
ssl_key = <{key}
disable_plaintext_auth = no
auth_mechanisms = plain login
mail_location = maildir:{base}/mail/%u
first_valid_uid = 1
first_valid_gid = 1
default_internal_user = {internal}
default_internal_group = {internal}
default_login_user = {login}
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {base}/users
}}
userdb {{
  driver = static
  args = uid={uid} gid={gid} home={base}/home/%u
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {ssl_port}
    ssl = yes
  }}
}}
service anvil {{
  chroot =
}}
""")
    server = DovecotServer(base=base, port=port, ssl_port=ssl_port, cert=cert)
    # -F: in the foreground, so that this process owns it and stop() ends exactly this one.
    server.process = subprocess.Popen([str(DOVECOT), "-F", "-c", str(base / "dovecot.conf")],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and server.process.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                if s.recv(64).startswith(b"* OK"):
                    return server
        except OSError:
            time.sleep(0.1)
    server.stop()
    log = (base / "dovecot.log").read_text() if (base / "dovecot.log").exists() else ""
    raise RuntimeError(f"dovecot did not start: {log[-2000:]}")
