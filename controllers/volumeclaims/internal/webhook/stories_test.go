package webhook

import "github.com/jobset-addons/jobset-addons/pkg/addon/addontest"

// The four user stories of JobSet KEP-572 (seeds/kep-572-volumeclaimpolicies.md), written in
// this add-on's API: the policies move from spec.volumeClaimPolicies to the annotation.

const story1Policies = `
- targetReplicatedJobs: ["node"]
  templates:
    - metadata:
        name: checkpoint-storage
        labels:
          storage-type: checkpoint
      spec:
        accessModes: ["ReadWriteOnce"]
        resources:
          requests:
            storage: 100Gi
        storageClassName: fast-ssd
  retentionPolicy:
    whenComplete: Retain
    whenFailed: Retain
    whenDeleted: Retain
`

// story1 is distributed training with a checkpoint PVC per worker pod: 4 Jobs × 2 pods.
func story1() *addontest.JobSetWrapper {
	return addontest.JobSet("default", "distributed-trainjob").VolumeClaimsPolicies(story1Policies).ReplicatedJobs(
		addontest.ReplicatedJob("node").Replicas(4).Pods(2).Mount("checkpoint-storage"),
	)
}

const story2Policies = `
- targetReplicatedJobs: []
  templates:
    - metadata:
        name: initializer
        labels:
          content-type: model
      spec:
        accessModes: ["ReadWriteMany"]
        resources:
          requests:
            storage: 50Gi
        storageClassName: nfs-storage
  retentionPolicy:
    whenComplete: Delete
    whenFailed: Delete
    whenDeleted: Delete
`

// story2 is a model and a dataset initialized into one PVC shared by three ReplicatedJobs.
func story2() *addontest.JobSetWrapper {
	return addontest.JobSet("default", "trainjob-qwen2.5").VolumeClaimsPolicies(story2Policies).ReplicatedJobs(
		addontest.ReplicatedJob("dataset-initializer").Mount("initializer"),
		addontest.ReplicatedJob("model-initializer").Mount("initializer"),
		addontest.ReplicatedJob("node").DependsOn("dataset-initializer").DependsOn("model-initializer").Mount("initializer"),
	)
}

const story3Policies = `
# Shared volumes for dataset and results
- targetReplicatedJobs: [] # All jobs
  templates:
    - metadata:
        name: dataset-cache
      spec:
        accessModes: ["ReadWriteMany"]
        resources:
          requests:
            storage: 500Gi
        storageClassName: shared-storage
    - metadata:
        name: results-storage
      spec:
        accessModes: ["ReadWriteMany"]
        resources:
          requests:
            storage: 100Gi
        storageClassName: shared-storage
  retentionPolicy:
    whenComplete: Delete
    whenFailed: Retain
    whenDeleted: Delete
# Per-pod scratch space for data-loader and trainer
- targetReplicatedJobs: ["data-loader", "trainer"]
  templates:
    - metadata:
        name: worker-scratch
      spec:
        accessModes: ["ReadWriteOnce"]
        resources:
          requests:
            storage: 20Gi
        storageClassName: local-ssd
  retentionPolicy:
    whenComplete: Retain
    whenFailed: Retain
    whenDeleted: Retain
`

// story3 mixes two shared PVCs with per-pod scratch PVCs of two of three ReplicatedJobs.
func story3() *addontest.JobSetWrapper {
	return addontest.JobSet("default", "hybrid-training").VolumeClaimsPolicies(story3Policies).ReplicatedJobs(
		addontest.ReplicatedJob("data-loader").Replicas(4).Mount("worker-scratch", "dataset-cache"),
		addontest.ReplicatedJob("trainer").Replicas(3).Pods(6).Mount("worker-scratch", "dataset-cache", "results-storage"),
		addontest.ReplicatedJob("evaluator").Replicas(2).Mount("results-storage"),
	)
}

const story4Policies = `
- targetReplicatedJobs: ["compute-node"]
  templates:
    - metadata:
        name: simulation-data
      spec:
        accessModes: ["ReadWriteOnce"]
        resources:
          requests:
            storage: 200Gi
        storageClassName: local-nvme
  retentionPolicy:
    whenComplete: Retain
    whenFailed: Retain
    whenDeleted: Retain
`

// story4 is an HPC simulation with node-local storage per pod, 16 Jobs, in namespace hpc.
func story4() *addontest.JobSetWrapper {
	return addontest.JobSet("hpc", "hpc-simulation").VolumeClaimsPolicies(story4Policies).ReplicatedJobs(
		addontest.ReplicatedJob("compute-node").Replicas(16).Mount("simulation-data"),
	)
}
