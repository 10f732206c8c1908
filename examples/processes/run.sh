#!/bin/sh
# Runs one component of the depctrl runtime as a plain process, next to kcp
# or anywhere that reaches it: `run.sh webhook` or `run.sh controller`.
# The guide "Running the runtime as processes" explains every setting; the
# systemd units beside this file run it with an EnvironmentFile.
#
# Settings, from the environment:
#   DEPCTRL_BIN_DIR                where depctrl-webhook and depctrl-controller are (default /usr/local/bin)
#   DEPCTRL_WEBHOOK_KUBECONFIG     the webhook's kcp identity; its server is the dep-ctrl workspace
#                                  through the front-proxy: https://<front-proxy>/clusters/<path>
#   DEPCTRL_CONTROLLER_KUBECONFIG  the controller's kcp identity, the same way
#   DEPCTRL_TLS_DIR                the webhook's serving certificate, tls.crt and tls.key (reloaded when they change)
#   DEPCTRL_CA_FILE                the PEM CA that signed it; the controller writes it into the webhook
#                                  configurations, and reads the file again when it changes
#   DEPCTRL_WEBHOOK_URL            how kcp's shards reach the webhook: https://<host>:<port>/validate
#   DEPCTRL_WEBHOOK_ADDR           where the webhook listens (default :9443; name one interface to keep it
#                                  off the others)
#   DEPCTRL_WEBHOOK_METRICS_ADDR, DEPCTRL_WEBHOOK_PROBE_ADDR        (default :8082, :8083)
#   DEPCTRL_CONTROLLER_METRICS_ADDR, DEPCTRL_CONTROLLER_PROBE_ADDR  (default :8080, :8081)
#   DEPCTRL_APIEXPORT_NAME         the dep-ctrl APIExport (default dependencies.opendefense.cloud)
set -eu

bin=${DEPCTRL_BIN_DIR:-/usr/local/bin}
export_name=${DEPCTRL_APIEXPORT_NAME:-dependencies.opendefense.cloud}

case "${1:-}" in
webhook)
  exec "$bin/depctrl-webhook" \
    --kubeconfig "$DEPCTRL_WEBHOOK_KUBECONFIG" \
    --apiexport-name "$export_name" \
    --tls-cert-dir "$DEPCTRL_TLS_DIR" \
    --bind-address "${DEPCTRL_WEBHOOK_ADDR:-:9443}" \
    --metrics-bind-address "${DEPCTRL_WEBHOOK_METRICS_ADDR:-:8082}" \
    --health-probe-bind-address "${DEPCTRL_WEBHOOK_PROBE_ADDR:-:8083}"
  ;;
controller)
  exec "$bin/depctrl-controller" \
    --kubeconfig "$DEPCTRL_CONTROLLER_KUBECONFIG" \
    --apiexport-name "$export_name" \
    --webhook-url "$DEPCTRL_WEBHOOK_URL" \
    --webhook-ca-bundle-file "$DEPCTRL_CA_FILE" \
    --leader-elect \
    --metrics-bind-address "${DEPCTRL_CONTROLLER_METRICS_ADDR:-:8080}" \
    --health-probe-bind-address "${DEPCTRL_CONTROLLER_PROBE_ADDR:-:8081}"
  ;;
*)
  echo "usage: $0 webhook|controller" >&2
  exit 2
  ;;
esac
