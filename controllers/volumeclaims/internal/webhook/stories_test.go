package webhook

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
func story1() *jobSetWrapper {
	return jobSet("distributed-trainjob").Policies(story1Policies).ReplicatedJobs(
		replicatedJob("node").Replicas(4).Pods(2).Mount("checkpoint-storage"),
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
func story2() *jobSetWrapper {
	return jobSet("trainjob-qwen2.5").Policies(story2Policies).ReplicatedJobs(
		replicatedJob("dataset-initializer").Mount("initializer"),
		replicatedJob("model-initializer").Mount("initializer"),
		replicatedJob("node").DependsOn("dataset-initializer").DependsOn("model-initializer").Mount("initializer"),
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
func story3() *jobSetWrapper {
	return jobSet("hybrid-training").Policies(story3Policies).ReplicatedJobs(
		replicatedJob("data-loader").Replicas(4).Mount("worker-scratch", "dataset-cache"),
		replicatedJob("trainer").Replicas(3).Pods(6).Mount("worker-scratch", "dataset-cache", "results-storage"),
		replicatedJob("evaluator").Replicas(2).Mount("results-storage"),
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
func story4() *jobSetWrapper {
	return jobSet("hpc-simulation").Namespace("hpc").Policies(story4Policies).ReplicatedJobs(
		replicatedJob("compute-node").Replicas(16).Mount("simulation-data"),
	)
}
