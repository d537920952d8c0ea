"""Reading a Run's endpoint through the Kubernetes API, with the caller's own credentials:
in a Pod its ServiceAccount, elsewhere the current kubeconfig context (read as JSON through
``kubectl config view``, so that no YAML parser is needed)."""

import base64
import http.client
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Iterator, Optional

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
RUNS_PATH = "/apis/kruntimes.io/v1alpha1/namespaces/{namespace}/runs/{name}"
#: One watch event (a Run object) is far below this.
MAX_EVENT_BYTES = 16 * 1024 * 1024


class ConfigurationError(Exception):
    """No way to reach the Kubernetes API (not in a Pod, no kubeconfig or kubectl), or a
    kubeconfig this client cannot use. Nothing was sent."""


@dataclass(frozen=True)
class KubeAccess:
    """Where the API server is and how this caller authenticates to it."""

    server: str
    context: ssl.SSLContext
    token: Optional[str] = None
    namespace: Optional[str] = None

    @classmethod
    def from_environment(cls, kubeconfig: Optional[str] = None) -> "KubeAccess":
        """In a Pod (and no kubeconfig given): its ServiceAccount. Otherwise the current
        context of ``kubeconfig`` (default: KUBECONFIG, then ~/.kube/config)."""
        if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST") and os.path.exists(
                os.path.join(SERVICE_ACCOUNT_DIR, "token")):
            return cls.in_cluster()
        return cls.from_kubeconfig(kubeconfig)

    @classmethod
    def in_cluster(cls) -> "KubeAccess":
        host = os.environ["KUBERNETES_SERVICE_HOST"]
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        host = f"[{host}]" if ":" in host else host
        with open(os.path.join(SERVICE_ACCOUNT_DIR, "token"), encoding="utf-8") as file:
            token = file.read().strip()
        namespace = None
        if os.path.exists(os.path.join(SERVICE_ACCOUNT_DIR, "namespace")):
            with open(os.path.join(SERVICE_ACCOUNT_DIR, "namespace"), encoding="utf-8") as file:
                namespace = file.read().strip()
        context = ssl.create_default_context(cafile=os.path.join(SERVICE_ACCOUNT_DIR, "ca.crt"))
        return cls(server=f"https://{host}:{port}", context=context, token=token, namespace=namespace)

    @classmethod
    def from_kubeconfig(cls, kubeconfig: Optional[str] = None) -> "KubeAccess":
        kubectl = os.environ.get("KRT_KUBECTL") or shutil.which("kubectl")
        if kubectl is None:
            raise ConfigurationError(
                "not in a Pod, and no kubectl to read the kubeconfig with (put kubectl on the PATH or set KRT_KUBECTL); "
                "or pass the Run's endpoint URL and a token instead of (namespace, run)")
        args = [kubectl, "config", "view", "--minify", "--raw", "-o", "json"]
        if kubeconfig is not None:
            args += ["--kubeconfig", kubeconfig]
        done = subprocess.run(args, capture_output=True, text=True, timeout=30, check=False)
        if done.returncode != 0:
            raise ConfigurationError(f"kubectl config view failed: {done.stderr.strip()}")
        return cls.from_config(json.loads(done.stdout))

    @classmethod
    def from_config(cls, config: dict) -> "KubeAccess":
        """The current context of a kubeconfig (as JSON), already minified to it."""
        cluster = _only(config, "clusters", "cluster")
        user = _only(config, "users", "user")
        context_entry = _only(config, "contexts", "context")
        server = cluster.get("server")
        if not isinstance(server, str) or not server.startswith("https://"):
            raise ConfigurationError(f"the kubeconfig's server is not an https URL: {server!r}")
        if cluster.get("insecure-skip-tls-verify"):
            raise ConfigurationError("the kubeconfig skips TLS verification; this client does not")
        if "certificate-authority-data" in cluster:
            context = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        elif "certificate-authority" in cluster:
            context = ssl.create_default_context(cafile=cluster["certificate-authority"])
        else:
            context = ssl.create_default_context()
        token = user.get("token")
        if "tokenFile" in user:
            with open(user["tokenFile"], encoding="utf-8") as file:
                token = file.read().strip()
        if "client-certificate-data" in user and "client-key-data" in user:
            _load_client_certificate(context, base64.b64decode(user["client-certificate-data"]),
                                     base64.b64decode(user["client-key-data"]))
        elif "client-certificate" in user and "client-key" in user:
            context.load_cert_chain(user["client-certificate"], user["client-key"])
        elif token is None:
            raise ConfigurationError("the kubeconfig's user has neither a token nor a client certificate "
                                     "(exec and auth-provider plugins are not supported here)")
        namespace = context_entry.get("namespace")
        return cls(server=server.rstrip("/"), context=context, token=token,
                   namespace=namespace if isinstance(namespace, str) else None)

    def get_run(self, namespace: str, name: str, timeout: float) -> tuple:
        """(HTTP status, the Run or the API's Status object)."""
        path = RUNS_PATH.format(namespace=urllib.parse.quote(namespace, safe=""), name=urllib.parse.quote(name, safe=""))
        return self.request("GET", path, timeout)

    def request(self, method: str, path: str, timeout: float, body: Optional[dict] = None,
                content_type: str = "application/json") -> tuple:
        """(HTTP status, the JSON answer: the object, or the API's Status object on a refusal)."""
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode("utf-8")
        request = urllib.request.Request(self.server + path, data=data, method=method, headers={"Accept": "application/json"})
        if data is not None:
            request.add_header("Content-Type", content_type)
        if self.token is not None:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=timeout) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as error:
            text = error.read()
            try:
                return error.code, json.loads(text)
            except ValueError:
                return error.code, {"message": text.decode("utf-8", "replace")}

    def watch(self, path: str, timeout: float) -> Iterator[dict]:
        """The events of one watch request (``path`` with ``watch=1``), each ``{"type", "object"}``,
        until the server ends it; no single read waits longer than ``timeout``. A refusal
        is one event of type ``ERROR`` carrying the Status object and its ``code``."""
        url = urllib.parse.urlsplit(self.server + path)
        connection = http.client.HTTPSConnection(url.hostname or "", url.port or 443, context=self.context, timeout=timeout)
        headers = {"Accept": "application/json"}
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            connection.request("GET", url.path + (f"?{url.query}" if url.query else ""), headers=headers)
            answer = connection.getresponse()
            if answer.status != 200:
                text = answer.read(MAX_EVENT_BYTES)
                try:
                    status = json.loads(text)
                except ValueError:
                    status = {"message": text.decode("utf-8", "replace")}
                status.setdefault("code", answer.status)
                yield {"type": "ERROR", "object": status}
                return
            while True:
                line = answer.readline(MAX_EVENT_BYTES)
                if not line:
                    return
                if line.strip():
                    yield json.loads(line)
        finally:
            connection.close()

def _only(config: dict, plural: str, key: str) -> dict:
    entries = config.get(plural) or []
    if len(entries) != 1 or not isinstance(entries[0].get(key), dict):
        raise ConfigurationError(f"the kubeconfig's current context has no {key}")
    return entries[0][key]


def _load_client_certificate(context: ssl.SSLContext, certificate: bytes, key: bytes) -> None:
    # ssl loads a certificate chain from files only: a private directory, removed at once.
    with tempfile.TemporaryDirectory(prefix="kruntimes-") as directory:
        os.chmod(directory, 0o700)
        cert_file = os.path.join(directory, "client.crt")
        key_file = os.path.join(directory, "client.key")
        for path, data in ((cert_file, certificate), (key_file, key)):
            with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as file:
                file.write(data)
        context.load_cert_chain(cert_file, key_file)
