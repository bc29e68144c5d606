#!/usr/bin/env bash
# chart-verify.sh: lint, render and check the jobset-addons Helm chart.
#
#   HELM=bin/helm-v4.3.0/helm KUBECTL=bin/testbed/kubectl [KUBECONFIG=...] hack/chart-verify.sh
#
# Steps (one result line each, then a count):
#   lint      helm lint --strict, in both certificate modes
#   render    every combination of the four <controller>.enabled toggles (16) x both
#             certManagement.mode values = 32 renders into bin/chart-renders/<mode>_<controllers>.yaml
#   check     charts/jobset-addons/tests (Go) reads every render: exactly the enabled controllers
#             have a Deployment, ServiceAccount, Role(Binding), ClusterRole(Binding) and two
#             Services; all off = no object at all; every container read-only, non-root,
#             RuntimeDefault seccomp, no privilege escalation, capabilities dropped, requests set;
#             a Certificate per enabled controller in cert-manager mode and none in self-signed
#             mode (an empty Secret instead); args, ports, probes, cert volume, labels, bindings
#   defaults  rendering with no --set gives the all-on self-signed render
#   values    values reach the manifests (sorted --feature-gates, extraArgs, image tag, ...)
#   schema    invalid values make helm template fail (values.schema.json and template checks)
#   webhooks  a copy of the chart with tests/testdata/_webhooks.tpl renders the webhook
#             configurations the helper promises, in both modes
#   kind      the render make e2e-kind installs (hack/kind/values.yaml): images kind.local/<name>
#             never pulled, every webhook reaching its controller's webhook port through its
#             Service, certificates as in self-signed mode
#   monitoring  every combination of metrics.serviceMonitor/prometheusRule/dashboard.enabled (8),
#             all controllers on, into bin/chart-renders-monitoring/: a ServiceMonitor per
#             controller, one PrometheusRule, one ConfigMap labelled grafana_dashboard: "1" exactly
#             when enabled; prometheus.io/scrape on the pods exactly without the ServiceMonitor;
#             the PrometheusRule's groups equal files/alerts.yaml; all on with no controller = empty
#   dry-run   only with KUBECONFIG: kubectl apply --server-side --dry-run=server of every
#             non-empty render (cert-manager.io objects left out when the cluster lacks its CRDs),
#             the monitoring renders too, with the Prometheus Operator's CRDs (PROMETHEUS_CRDS,
#             a directory of them from its module) applied to the cluster first
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
HELM=${HELM:-helm}
KUBECTL=${KUBECTL:-kubectl}
CHART=charts/jobset-addons
OUT=bin/chart-renders
FIXTURE=bin/chart-webhook-fixture
CHECK=bin/chart-check
NS=jobset-addons-system
RELEASE=jsa
CONTROLLERS=(volumeclaims resourceclaims sequencer podgroups)
MODES=(self-signed cert-manager)

ok=0 failed=0 skipped=0
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT

# pass STEP MESSAGE / fail STEP MESSAGE (prints $LOG indented) / skip STEP MESSAGE
pass() { ok=$((ok + 1)); printf 'ok    %-9s %s\n' "$1" "$2"; }
fail() {
	failed=$((failed + 1)); printf 'FAIL  %-9s %s\n' "$1" "$2"
	if [[ -s $LOG ]]; then sed 's/^/        /' "$LOG" | head -n 60 || true; fi
	: >"$LOG"
}
skip() { skipped=$((skipped + 1)); printf 'skip  %-9s %s\n' "$1" "$2"; }

template() { "$HELM" template "$RELEASE" "$@" --namespace "$NS"; }

# combo MODE MASK: sets COMBO (file name without .yaml) and SETS (helm --set arguments).
combo() {
	local mode=$1 mask=$2 i names=()
	SETS=(--set "certManagement.mode=$mode")
	for i in "${!CONTROLLERS[@]}"; do
		if ((mask >> i & 1)); then
			SETS+=(--set "${CONTROLLERS[$i]}.enabled=true"); names+=("${CONTROLLERS[$i]}")
		else
			SETS+=(--set "${CONTROLLERS[$i]}.enabled=false")
		fi
	done
	if ((${#names[@]} == 0)); then COMBO="${mode}_none"; else COMBO="${mode}_$(IFS=+; echo "${names[*]}")"; fi
}

# renders CHART DIR: every combination of CHART into DIR; counts them in RENDERED.
renders() {
	local chart=$1 dir=$2 mode mask
	rm -rf "$dir" && mkdir -p "$dir"
	RENDERED=0
	for mode in "${MODES[@]}"; do
		for mask in $(seq 0 15); do
			combo "$mode" "$mask"
			if ! template "$chart" "${SETS[@]}" >"$dir/$COMBO.yaml" 2>>"$LOG"; then
				echo "helm template ${SETS[*]} failed" >>"$LOG"
				return 1
			fi
			RENDERED=$((RENDERED + 1))
		done
	done
}

"$HELM" version --short >/dev/null 2>&1 || { echo "chart-verify: HELM=$HELM does not run" >&2; exit 1; }

# 1. lint
if "$HELM" lint --strict "$CHART" >>"$LOG" 2>&1 &&
	"$HELM" lint --strict "$CHART" --set certManagement.mode=cert-manager >>"$LOG" 2>&1; then
	: >"$LOG"; pass lint "helm lint --strict $CHART (self-signed and cert-manager)"
else
	fail lint "helm lint --strict $CHART"
fi

# 2. render
if renders "$CHART" "$OUT"; then
	pass render "$RENDERED renders (16 toggle combinations x ${#MODES[@]} cert modes) in $OUT"
else
	fail render "helm template failed"
fi

# 3. check the renders (Go, charts/jobset-addons/tests)
if ! (cd "$CHART/tests" && GOWORK=off GOFLAGS="${GOFLAGS:-} -mod=readonly" go build -o "$ROOT/$CHECK" .) >>"$LOG" 2>&1; then
	fail check "building $CHART/tests failed"
elif "$CHECK" check "$OUT" >>"$LOG" 2>&1; then
	pass check "$(tail -n 1 "$LOG")"; : >"$LOG"
else
	fail check "renders break the chart's rules"
fi

# 4. defaults: no --set = every controller on, self-signed
all="self-signed_$(IFS=+; echo "${CONTROLLERS[*]}").yaml"
if template "$CHART" >"$LOG.defaults" 2>>"$LOG" && diff -u "$OUT/$all" "$LOG.defaults" >>"$LOG"; then
	pass defaults "rendering without --set equals $all"
else
	fail defaults "rendering without --set differs from $all"
fi
rm -f "$LOG.defaults"

# 5. values reach the manifests: expect WANT (a fixed string) in the render with ARGS...
values_ok=0
expect() {
	local want=$1; shift
	local got
	if ! got=$(template "$CHART" "$@" 2>&1); then
		printf 'helm template %s failed: %s\n' "$*" "$got" >>"$LOG"
	elif ! grep -qF -- "$want" <<<"$got"; then
		printf 'helm template %s: no %q in the render\n' "$*" "$want" >>"$LOG"
	else
		values_ok=$((values_ok + 1)); return 0
	fi
	return 1
}
values_failed=0
while IFS='|' read -r want args; do
	[[ -z $want ]] && continue
	read -r -a argv <<<"$args"
	expect "$want" "${argv[@]}" || values_failed=$((values_failed + 1))
done <<'EOF'
- --feature-gates=Alpha=true,Middle=false,Zeta=true|--set volumeclaims.featureGates.Zeta=true --set volumeclaims.featureGates.Alpha=true --set volumeclaims.featureGates.Middle=false
- --leader-elect=false|--set leaderElection.enabled=false
- --leader-elect=true|
- --log-format=console|--set logFormat=console
- --log-level=3|--set-string sequencer.logLevel=3
- "--kube-api-qps=20"|--set podgroups.extraArgs[0]=--kube-api-qps=20
image: ghcr.io/jobset-addons/resourceclaims:0.1.0|
image: example.com/rc:dev|--set resourceclaims.image.repository=example.com/rc --set resourceclaims.image.tag=dev
image: example.com/rc:v0.2.0@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa|--set resourceclaims.image.repository=example.com/rc --set resourceclaims.image.tag=v0.2.0 --set resourceclaims.image.digest=sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
imagePullPolicy: Always|--set podgroups.image.pullPolicy=Always
replicas: 2|--set sequencer.replicas=2
priorityClassName: system-cluster-critical|--set priorityClassName=system-cluster-critical
- name: regcred|--set imagePullSecrets[0].name=regcred
disktype: ssd|--set volumeclaims.nodeSelector.disktype=ssd
cpu: 200m|--set volumeclaims.resources.requests.cpu=200m
- --barrier-cpu-request=10m|
- --barrier-memory-limit=32Mi|
- --barrier-cpu-limit=100m|--set barrier.resources.limits.cpu=100m
- --barrier-memory-request=24Mi|--set barrier.resources.requests.memory=24Mi
cert-manager.io/v1|--set certManagement.mode=cert-manager
interval: 10s|--set metrics.serviceMonitor.enabled=true --set metrics.serviceMonitor.interval=10s
release: prom|--set metrics.serviceMonitor.enabled=true --set metrics.serviceMonitor.labels.release=prom
role: alerts|--set metrics.prometheusRule.enabled=true --set metrics.prometheusRule.labels.role=alerts
namespace: monitoring|--set metrics.dashboard.enabled=true --set metrics.dashboard.namespace=monitoring
name: jobset-addons-sequencer-pod-writes|--set admissionPolicies.limitAddonWrites.enabled=true
name: jobset-addons-volumeclaims-pod-deletes|--set admissionPolicies.limitAddonWrites.enabled=true
name: jobset-addons-volumeclaims-reserved-keys|
name: jobset-addons-sequencer-dry-runs-only|
!(request.userInfo.username in ['system:serviceaccount:velero:velero-server'])|--set admissionPolicies.reservedKeys.exemptUsers[0]=system:serviceaccount:velero:velero-server
request.userInfo.groups.exists(g, g in ['backup-operators'])|--set admissionPolicies.reservedKeys.exemptGroups[0]=backup-operators
EOF
if ((values_failed == 0)); then
	pass values "$values_ok value settings reach the manifests"
else
	fail values "$values_failed value settings did not reach the manifests"
fi

# 6. invalid values are refused
refused=0 accepted=()
while read -r args; do
	[[ -z $args ]] && continue
	read -r -a argv <<<"$args"
	if out=$(template "$CHART" "${argv[@]}" 2>&1); then
		accepted+=("$args")
	elif ! grep -qiE 'schema|values don.t meet|leaderElection' <<<"$out"; then
		accepted+=("$args (failed, but not because of the values: $(head -n 3 <<<"$out"))")
	else
		refused=$((refused + 1))
	fi
done <<'EOF'
--set logFormat=xml
--set admissionPolicies.limitAddonWrites.enabled=yes
--set admissionPolicies.reservedKeys.enabled=maybe
--set admissionPolicies.reservedKeys.exemptUsers[0]=it's
--set admissionPolicies.reservedKeys.exemptGroups=backup
--set admissionPolicies.sequencerDryRunsOnly.enabled=1
--set volumeclaims.enabled=maybe
--set volumeclaims.featureGates.lower=true
--set podgroups.featureGates.Gate=yes
--set certManagement.mode=vault
--set leaderElection.enabled=1
--set sequencer.image.pullPolicy=Sometimes
--set resourceclaims.replicas=0
--set resourceclaims.replicas=1.5
--set volumeclaims.logLevel=verbose
--set volumeclaims.logLevel=2
--set volumeclaims.resources.requests.cpu=lots
--set volumeclaims.resources.requested.cpu=1
--set podgroups.unknown=true
--set unknown=true
--set leaderElection.unknown=true
--set volumeclaims.image.registry=ghcr.io
--set volumeclaims.image.digest=latest
--set volumeclaims.image.digest=sha256:ABC
--set imagePullSecrets[0].secret=regcred
--set volumeclaims.extraArgs[0]=1
--set volumeclaims.nodeSelector.zone=1
--set leaderElection.enabled=false --set podgroups.replicas=2
--set metrics.serviceMonitor.enabled=yes
--set metrics.serviceMonitor.interval=often
--set metrics.prometheusRule.labels.n=1
--set metrics.dashboard.unknown=true
--set metrics.unknown=true
EOF
if ((${#accepted[@]} == 0)); then
	pass schema "$refused invalid value settings refused"
else
	printf 'accepted: %s\n' "${accepted[@]}" >>"$LOG"
	fail schema "${#accepted[@]} invalid value settings were not refused"
fi

# 7. the webhook configuration helper, on a copy of the chart with a fixture of webhooks
rm -rf "$FIXTURE" && mkdir -p "$FIXTURE"
cp -r "$CHART" "$FIXTURE/chart"
cp "$CHART/tests/testdata/_webhooks.tpl" "$FIXTURE/chart/templates/_webhooks.tpl"
if [[ ! -x $CHECK ]]; then
	fail webhooks "no $CHECK to run"
elif renders "$FIXTURE/chart" "$FIXTURE/renders" && "$CHECK" check-webhooks "$FIXTURE/renders" >>"$LOG" 2>&1; then
	pass webhooks "$(tail -n 1 "$LOG") (chart with tests/testdata/_webhooks.tpl)"; : >"$LOG"
else
	fail webhooks "webhook configurations rendered from tests/testdata/_webhooks.tpl are wrong"
fi

# 8. what make e2e-kind installs: hack/kind/values.yaml
KIND_RENDER=bin/chart-kind/self-signed_$(IFS=+; echo "${CONTROLLERS[*]}").yaml
mkdir -p "$(dirname "$KIND_RENDER")"
if [[ ! -x $CHECK ]]; then
	fail kind "no $CHECK to run"
elif template "$CHART" -f hack/kind/values.yaml >"$KIND_RENDER" 2>>"$LOG" && "$CHECK" check-kind "$KIND_RENDER" >>"$LOG" 2>&1; then
	pass kind "$(tail -n 1 "$LOG")"; : >"$LOG"
else
	fail kind "the render for kind (hack/kind/values.yaml) is wrong"
fi

# 9. the monitoring toggles
MON=bin/chart-renders-monitoring
rm -rf "$MON" && mkdir -p "$MON"
mon_failed=0 mon_renders=0
count() { grep -c "^kind: $1\$" "$2" || true; }
for mask in $(seq 0 7); do
	sm=$((mask & 1)) pr=$((mask >> 1 & 1)) db=$((mask >> 2 & 1))
	bool() { if (($1)); then echo true; else echo false; fi; }
	f="$MON/sm-$(bool $sm)_rule-$(bool $pr)_dashboard-$(bool $db).yaml"
	if ! template "$CHART" --set metrics.serviceMonitor.enabled="$(bool $sm)" --set metrics.prometheusRule.enabled="$(bool $pr)" \
		--set metrics.dashboard.enabled="$(bool $db)" >"$f" 2>>"$LOG"; then
		echo "$f: helm template failed" >>"$LOG"; mon_failed=$((mon_failed + 1)); continue
	fi
	mon_renders=$((mon_renders + 1))
	want_scrape=$((sm ? 0 : 4))
	got=("$(count ServiceMonitor "$f")" "$(count PrometheusRule "$f")" "$(grep -c '^    grafana_dashboard: "1"$' "$f" || true)" "$(grep -c 'prometheus.io/scrape: "true"' "$f" || true)")
	want=("$((sm * 4))" "$pr" "$db" "$want_scrape")
	if [[ ${got[*]} != "${want[*]}" ]]; then
		echo "$f: ServiceMonitors, PrometheusRules, dashboards, scrape annotations = ${got[*]}, want ${want[*]}" >>"$LOG"
		mon_failed=$((mon_failed + 1))
	fi
	if ((pr)) && ! "$CHECK" check-rules "$f" "$CHART/files/alerts.yaml" >>"$LOG" 2>&1; then
		mon_failed=$((mon_failed + 1))
	fi
done
if template "$CHART" --set metrics.serviceMonitor.enabled=true --set metrics.prometheusRule.enabled=true --set metrics.dashboard.enabled=true \
	$(for c in "${CONTROLLERS[@]}"; do echo "--set $c.enabled=false"; done) >"$LOG.none" 2>>"$LOG" && ! grep -q '^kind:' "$LOG.none"; then :; else
	echo "every monitoring toggle on and no controller: the render is not empty" >>"$LOG"; mon_failed=$((mon_failed + 1))
fi
rm -f "$LOG.none"
if ((mon_failed == 0)); then
	: >"$LOG"
	pass monitoring "$mon_renders renders of the 8 monitoring toggle combinations in $MON: ServiceMonitors, PrometheusRule, dashboard ConfigMap and scrape annotations exactly as toggled"
else
	fail monitoring "$mon_failed monitoring renders are wrong"
fi

# 10. server-side dry-run on a cluster
if [[ -z ${KUBECONFIG:-} ]]; then
	fail dry-run "KUBECONFIG is not set: no cluster to dry-run against (make chart-verify starts the testbed)"
elif ! "$KUBECTL" get --raw /readyz >>"$LOG" 2>&1; then
	fail dry-run "KUBECONFIG=$KUBECONFIG: the cluster does not answer"
else
	strip=true
	if "$KUBECTL" get crd certificates.cert-manager.io issuers.cert-manager.io >/dev/null 2>&1; then strip=false; fi
	if ! "$KUBECTL" create namespace "$NS" --dry-run=client -o yaml | "$KUBECTL" apply -f - >>"$LOG" 2>&1; then
		echo "could not create namespace $NS" >>"$LOG"
	fi
	if [[ -n ${PROMETHEUS_CRDS:-} ]] && ! "$KUBECTL" apply --server-side --field-manager=chart-verify \
		-f "$PROMETHEUS_CRDS/monitoring.coreos.com_servicemonitors.yaml" -f "$PROMETHEUS_CRDS/monitoring.coreos.com_prometheusrules.yaml" >>"$LOG" 2>&1; then
		echo "could not apply the Prometheus Operator's CRDs from $PROMETHEUS_CRDS" >>"$LOG"
	fi
	"$KUBECTL" wait --for condition=Established --timeout=60s crd/servicemonitors.monitoring.coreos.com crd/prometheusrules.monitoring.coreos.com >>"$LOG" 2>&1 || true
	server=bin/chart-renders-server
	rm -rf "$server" && mkdir -p "$server"
	applied=0 empty=0 stripped=0 dry_failed=0
	for f in "$OUT"/*.yaml "$FIXTURE"/renders/*.yaml "$MON"/*.yaml; do
		name=$(basename "$f")
		if [[ $f == "$FIXTURE"/* ]]; then name=webhook-fixture_$name; fi
		if [[ $f == "$MON"/* ]]; then name=monitoring_$name; fi
		if [[ $f == *_none.yaml ]]; then empty=$((empty + 1)); continue; fi
		if [[ $(basename "$f") == cert-manager_* ]] && $strip; then
			"$CHECK" strip-group cert-manager.io "$f" "$server/$name" >/dev/null
			stripped=$((stripped + 1))
		else
			cp "$f" "$server/$name"
		fi
		if "$KUBECTL" apply --server-side --dry-run=server --field-manager=chart-verify -f "$server/$name" >"$LOG.out" 2>&1; then
			applied=$((applied + 1))
		else
			dry_failed=$((dry_failed + 1))
			{ echo "$f:"; cat "$LOG.out"; } >>"$LOG"
		fi
	done
	rm -f "$LOG.out"
	note="$applied renders (incl. webhook fixture and monitoring toggles) pass kubectl apply --server-side --dry-run=server; $empty empty renders skipped"
	if $strip; then
		note+="; cert-manager.io Issuer/Certificates left out of $stripped cert-manager renders (the cluster has no cert-manager CRDs)"
	fi
	if ((dry_failed == 0)); then
		pass dry-run "$note"
	else
		fail dry-run "$dry_failed renders refused by the API server"
	fi
fi

echo "chart-verify: $ok passed, $failed failed, $skipped skipped"
((failed == 0))
