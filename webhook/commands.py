"""`colocate serve` and `colocate apply`: argument parsing only; the work is done elsewhere."""
from __future__ import annotations

import argparse
from pathlib import Path

from certs import names as certs_names


def _serve(args: argparse.Namespace) -> int:
    from kubernetes.config import ConfigException

    from webhook.serve import ServeConfig, run
    from webhook.snapshots import KubeSettings
    from cluster.reflector import ReflectorSettings

    if args.profiles is not None and not args.profiles.is_dir():
        print(f"error: --profiles {args.profiles}: not a directory")
        return 2
    if args.kubeconfig is not None and not args.kubeconfig.is_file():
        print(f"error: --kubeconfig {args.kubeconfig}: no such file")
        return 2
    self_managed = None
    if args.self_managed_certs:
        from certs.manager import ManagerSettings

        if args.profiles is not None:
            print("error: --self-managed-certs needs the API server (a Lease, the Secret): drop --profiles")
            return 2
        self_managed = ManagerSettings(namespace=args.cert_namespace, service=args.cert_service,
                                       secret=args.cert_secret, dns_names=tuple(args.dns_name),
                                       check_interval=args.cert_check_interval, settle=args.cert_settle)
    kube = KubeSettings(reflector=ReflectorSettings(watch_timeout=args.watch_timeout, backoff_max=args.backoff_max))
    try:
        return run(ServeConfig(
            profiles=args.profiles, cert_dir=args.cert_dir, port=args.port, host=args.host,
            dns_names=tuple(args.dns_name), workers=args.workers, max_body=args.max_body,
            reload_interval=args.reload_interval, log_level=args.log_level,
            kubeconfig=args.kubeconfig, context=args.context, kube=kube, reuse_port=args.reuse_port,
            drain_delay=args.drain_delay, shutdown_timeout=args.shutdown_timeout,
            cert_reload_interval=args.cert_reload_interval, self_managed=self_managed,
        ))
    except ConfigException as exc:
        print(f"error: no cluster to read: {exc} (give --profiles DIR or --kubeconfig FILE)")
        return 2


def _apply(args: argparse.Namespace) -> int:
    from webhook.apply import ApplyOptions, run_apply

    return run_apply(ApplyOptions(
        profiles=args.profiles, file=args.file, operation=args.operation.upper(),
        old_object=args.old_object, output=args.output, explain=args.explain,
    ))


def register_commands(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    serve = subparsers.add_parser("serve", help="run the HTTPS admission webhook",
                                  description="Serve Koordinator's webhook paths over HTTPS, reading the "
                                              "cluster state from a directory of manifests (--profiles) or "
                                              "from the API server (--kubeconfig, or the pod's service account).")
    state = serve.add_mutually_exclusive_group()
    state.add_argument("--profiles", type=Path, metavar="DIR",
                       help="embedded mode: directory of ClusterColocationProfiles, Namespaces, PriorityClasses, ... "
                            "(YAML/JSON; changes are picked up while running)")
    state.add_argument("--kubeconfig", type=Path, metavar="FILE",
                       help="list and watch the cluster through this kubeconfig (default without --profiles: "
                            "the in-cluster service account)")
    serve.add_argument("--context", metavar="C", help="kubeconfig context (default: its current context)")
    serve.add_argument("--cert-dir", type=Path, required=True, metavar="CERTDIR",
                       help="holds ca.crt, tls.crt, tls.key; generated when missing")
    serve.add_argument("--port", type=int, default=9443)
    serve.add_argument("--host", default="0.0.0.0", metavar="H", help="address to bind (default 0.0.0.0)")
    serve.add_argument("--dns-name", action="append", default=[], metavar="NAME",
                       help="extra SAN for a generated certificate (repeatable)")
    serve.add_argument("--workers", type=int, default=1, metavar="N",
                       help="server processes sharing the port (SO_REUSEPORT)")
    serve.add_argument("--max-body", type=int, default=8 * 1024 * 1024, metavar="BYTES",
                       help="largest AdmissionReview accepted (default 8 MiB)")
    serve.add_argument("--reload-interval", type=float, default=1.0, metavar="SECONDS",
                       help="how often the profiles directory is checked for changes")
    serve.add_argument("--watch-timeout", type=int, default=300, metavar="SECONDS",
                       help="how long one watch request stays open before it is renewed")
    serve.add_argument("--backoff-max", type=float, default=30.0, metavar="SECONDS",
                       help="longest wait between retries when the API server fails")
    serve.add_argument("--drain-delay", type=float, default=5.0, metavar="SECONDS",
                       help="after SIGTERM, keep serving (not ready, closing connections) this long")
    serve.add_argument("--shutdown-timeout", type=float, default=20.0, metavar="SECONDS",
                       help="then wait this long for in-flight requests")
    serve.add_argument("--reuse-port", action="store_true",
                       help="let several server processes bind the same port (SO_REUSEPORT)")
    serve.add_argument("--cert-reload-interval", type=float, default=1.0, metavar="SECONDS",
                       help="how often the certificate files are checked; a new pair is served without restart")
    certs = serve.add_argument_group("self-managed certificates",
                                     "with --self-managed-certs the replicas elect a leader (a coordination.k8s.io "
                                     "Lease) that renews the Secret and both caBundles before expiry")
    certs.add_argument("--self-managed-certs", action="store_true", help="rotate certificates from inside the server")
    certs.add_argument("--cert-namespace", default=certs_names.NAMESPACE, metavar="NS",
                       help="namespace of the Service, Secret and Lease")
    certs.add_argument("--cert-service", default=certs_names.SERVICE, metavar="NAME")
    certs.add_argument("--cert-secret", default=certs_names.SECRET, metavar="NAME")
    certs.add_argument("--cert-check-interval", type=float, default=60.0, metavar="SECONDS",
                       help="how often the leader checks whether rotation is due")
    certs.add_argument("--cert-settle", type=float, default=5.0, metavar="SECONDS",
                       help="after a new CA is trusted, wait this long before serving from it")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    serve.set_defaults(func=_serve)

    apply = subparsers.add_parser("apply", help="run the admission chain offline on one object",
                                  description="Print the object as the webhooks would admit it. "
                                              "Exit 0 admitted, 1 denied, 2 bad input.")
    apply.add_argument("--profiles", type=Path, required=True, metavar="DIR", help="cluster state directory")
    apply.add_argument("-f", "--filename", dest="file", required=True, metavar="FILE",
                       help="the object (YAML or JSON); - reads stdin")
    apply.add_argument("--operation", default="CREATE", type=str.upper, choices=["CREATE", "UPDATE", "DELETE"])
    apply.add_argument("--old-object", metavar="FILE", help="the object before the change (UPDATE)")
    apply.add_argument("-o", "--output", choices=["json", "yaml"], default="json")
    apply.add_argument("--explain", action="store_true",
                       help="say on stderr which profiles matched and what each changed")
    apply.set_defaults(func=_apply)
