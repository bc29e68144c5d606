# Versions of everything the testbed, the checks and the releases build from Go modules
# (make/tools.mk builds them into bin/<name>-<version>/, rebuilt only when the version changes).
# A version is bumped here and in its wrapper module tools/<tool>/go.mod.
# KUBE_VERSION: the testbed's Kubernetes, KUBE_DEFAULT unless set (KUBE_VERSION=v1.38.0-beta.0
# make e2e ...: the testbed of bin/testbed-<version>, built from tools/kube-<version>).
KUBE_DEFAULT   := v1.37.2
KUBE_VERSION   ?= $(KUBE_DEFAULT)
# Kubernetes 1.38 (a pre-release: not in the compatibility matrix yet) needs Go 1.27: its wrapper
# module alone is built with GO_NEXT (GOTOOLCHAIN; the go command fetches that toolchain from the
# module proxy once). The project's own modules stay on the machine's Go.
KUBE_NEXT      := v1.38.0-beta.0
GO_NEXT        := go1.27.3
kube_toolchain = $(if $(filter $(KUBE_NEXT),$1),GOTOOLCHAIN=$(GO_NEXT) )
ETCD_VERSION   := v3.6.6
KWOK_VERSION   := v0.8.0
JOBSET_VERSION := v0.12.0
HELM_VERSION   := v4.3.0
VOLCANO_VERSION      := v1.14.1
# scheduler-plugins' coscheduling scheduler of bin/testbed: tools/schedplugins pins
# SCHEDPLUGINS_DEFAULT (v0.34.7: built on Kubernetes 1.34, it allocates DRA claims through
# resource.k8s.io/v1), tools/schedplugins-v0.33.5 the older one (NEIGHBOURS=old, or
# SCHEDPLUGINS_VERSION=v0.33.5).
SCHEDPLUGINS_DEFAULT := v0.34.7
SCHEDPLUGINS_OLD     := v0.33.5
# KAI Scheduler (NVIDIA): its scheduler and binder (make kai-bins, make e2e SUITE=kai), from
# tools/kai, which builds on the k8s.io/kubernetes its module names (v1.34.1).
KAI_VERSION          := v0.12.0
VULN_VERSION         := v1.9.0
KIND_VERSION         := v0.33.0
# Prometheus and promtool (make e2e SUITE=observability, make unit's promtool test rules):
# module v0.316.0 is Prometheus 3.16.0.
PROMETHEUS_VERSION   := v0.316.0
PROMETHEUS_OPERATOR_VERSION := v0.94.0
KO_VERSION           := v0.18.0
CONTAINERD_VERSION   := v2.3.4
CRICTL_VERSION       := v1.37.0
# The neighbours (make e2e SUITE=kueue,trainer,upstream): the newest by default; NEIGHBOURS=old
# picks the older ones of the compatibility matrix (docs/compatibility.md), or KUEUE_VERSION=...
# / TRAINER_VERSION=... one of them. tools/<tool> pins the newest, tools/<tool>-<version> each
# older one.
KUEUE_NEWEST   := v0.19.2
TRAINER_NEWEST := v2.3.0
KUEUE_OLD      := v0.17.0
TRAINER_OLD    := v2.1.0
NEIGHBOURS     ?= new
SCHEDPLUGINS_VERSION := $(if $(filter old,$(NEIGHBOURS)),$(SCHEDPLUGINS_OLD),$(SCHEDPLUGINS_DEFAULT))
KUEUE_VERSION   := $(if $(filter old,$(NEIGHBOURS)),$(KUEUE_OLD),$(KUEUE_NEWEST))
TRAINER_VERSION := $(if $(filter old,$(NEIGHBOURS)),$(TRAINER_OLD),$(TRAINER_NEWEST))

# The matrix `make e2e SUITE=compat` runs: <kube>-<jobset> pairs. Other versions of a tool are
# built from their own wrapper module, tools/<tool>-<version> (tools/<tool> pins the default).
# Every minor from 1.34 on, each with every JobSet from v0.8.0; 1.38 as its pre-release
# KUBE_NEXT (built with Go GO_NEXT, its four testbed commands only).
COMPAT_KUBES   := v1.34.4 v1.35.4 v1.36.3 $(KUBE_DEFAULT) $(KUBE_NEXT)
COMPAT_JOBSETS := v0.8.0 v0.10.1 $(JOBSET_VERSION)
COMPAT_COMBOS  := $(foreach k,$(COMPAT_KUBES),$(foreach j,$(COMPAT_JOBSETS),$k-$j))
# A pair is split at its last "-": a Kubernetes pre-release has one of its own (v1.38.0-beta.0).
jobset_of = $(lastword $(subst -, ,$1))
kube_of   = $(patsubst %-$(call jobset_of,$1),%,$1)
COMPAT_KUBE_VERSIONS   := $(sort $(KUBE_VERSION) $(KUBE_NEXT) $(foreach c,$(COMPAT_COMBOS),$(call kube_of,$c)))
COMPAT_JOBSET_VERSIONS := $(sort $(JOBSET_VERSION) $(foreach c,$(COMPAT_COMBOS),$(call jobset_of,$c)))

# The wrapper module that pins a version of a tool.
kube_mod   = $(if $(filter $(KUBE_DEFAULT),$1),tools/kube,tools/kube-$1)
jobset_mod = $(if $(filter $(JOBSET_VERSION),$1),tools/jobset,tools/jobset-$1)
kueue_mod   = $(if $(filter $(KUEUE_NEWEST),$1),tools/kueue,tools/kueue-$1)
trainer_mod = $(if $(filter $(TRAINER_NEWEST),$1),tools/trainer,tools/trainer-$1)
schedplugins_mod = $(if $(filter $(SCHEDPLUGINS_DEFAULT),$1),tools/schedplugins,tools/schedplugins-$1)
