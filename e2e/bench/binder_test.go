package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// instantClass is the StorageClass of the mixed load's PVCs. No provisioner serves it: the
// benchmark binds them itself (instantBinder). With the controller-manager's hostpath
// provisioner, the run at 1,000 JobSets did not finish: its PersistentVolume controller binds
// in one worker, four writes a claim one after the other, and under that load bound about
// 2.3 PVCs a second (341 pods waited on unbound PVCs after 18 minutes). The binder leaves it
// one write a claim (the bind-completed annotation, which the scheduler waits for).
const instantClass = "scale-instant"

// instantBinder binds each PVC of instantClass in one namespace to a PersistentVolume made
// for it, several at once, and deletes that volume when the PVC is gone. It writes what the
// PersistentVolume controller would, except the claim's bind-completed annotation: the
// controller adds it when it sees the volume in its cache (set before, a claim whose volume
// the controller has not seen yet is marked Lost).
type instantBinder struct {
	cs      kubernetes.Interface
	pvcs    cache.Indexer
	queue   workqueue.TypedInterface[binderKey]
	stop    context.CancelFunc
	wg      sync.WaitGroup
	bound   atomic.Int64
	deleted atomic.Int64
	errs    atomic.Int64
}

type binderKey struct {
	ns, name string
	uid      types.UID
	gone     bool
}

func instantVolumeName(uid types.UID) string { return instantClass + "-" + string(uid) }

// makeInstantClass makes instantClass: no provisioner answers it, and the volumes it binds
// are retained (the binder deletes them).
func makeInstantClass(ctx context.Context, b *testing.B, cs kubernetes.Interface) {
	b.Helper()
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: instantClass}, Provisioner: "bench.jobset-addons.io/instant",
		ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimRetain), VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate)}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
}

// startInstantBinder starts the binder of the PVCs of instantClass in the namespace ns.
func startInstantBinder(ctx context.Context, b *testing.B, cs kubernetes.Interface, ns string, workers int) *instantBinder {
	b.Helper()
	ctx, stop := context.WithCancel(ctx)
	ib := &instantBinder{cs: cs, queue: workqueue.NewTyped[binderKey](), stop: stop}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().PersistentVolumeClaims().Informer()
	ib.pvcs = inf.GetIndexer()
	add := func(obj any) {
		if pvc, ok := obj.(*corev1.PersistentVolumeClaim); ok && ptr.Deref(pvc.Spec.StorageClassName, "") == instantClass && pvc.Spec.VolumeName == "" {
			ib.queue.Add(binderKey{ns: pvc.Namespace, name: pvc.Name, uid: pvc.UID})
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    add,
		UpdateFunc: func(_, obj any) { add(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if pvc, ok := obj.(*corev1.PersistentVolumeClaim); ok && ptr.Deref(pvc.Spec.StorageClassName, "") == instantClass {
				ib.queue.Add(binderKey{uid: pvc.UID, gone: true})
			}
		},
	}); err != nil {
		b.Fatal(err)
	}
	f.Start(ctx.Done())
	ib.wg.Add(workers)
	for range workers {
		go func() {
			defer ib.wg.Done()
			for {
				k, shut := ib.queue.Get()
				if shut {
					return
				}
				if err := ib.sync(ctx, k); err != nil {
					ib.errs.Add(1)
				}
				ib.queue.Done(k)
			}
		}()
	}
	go func() { <-ctx.Done(); ib.queue.ShutDown() }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		b.Fatal("the binder's PVC cache did not sync")
	}
	return ib
}

// sync binds the PVC of k, or deletes its volume when it is gone. A write that fails is
// counted and left: the PersistentVolume controller finishes a binding begun here.
func (ib *instantBinder) sync(ctx context.Context, k binderKey) error {
	pvs := ib.cs.CoreV1().PersistentVolumes()
	pvName := instantVolumeName(k.uid)
	if k.gone {
		err := pvs.Delete(ctx, pvName, metav1.DeleteOptions{})
		if err == nil {
			ib.deleted.Add(1)
		}
		return client.IgnoreNotFound(err)
	}
	obj, ok, err := ib.pvcs.GetByKey(k.ns + "/" + k.name)
	pvc, _ := obj.(*corev1.PersistentVolumeClaim)
	if err != nil || !ok || pvc.UID != k.uid || pvc.Spec.VolumeName != "" {
		return err
	}
	pvcs := ib.cs.CoreV1().PersistentVolumeClaims(k.ns)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   pvc.Spec.AccessModes,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              instantClass,
			// Never mounted: kwok's nodes run no containers.
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/" + pvName}},
		},
	}
	if _, err := pvs.Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if _, err := pvs.Patch(ctx, pvName, types.MergePatchType, mergePatch(map[string]any{
		"status": map[string]any{"phase": corev1.VolumeBound},
	}), metav1.PatchOptions{}, "status"); err != nil {
		return err
	}
	// metadata.uid is a precondition: never the volume of a claim of the same name made since.
	if _, err := pvcs.Patch(ctx, pvc.Name, types.MergePatchType, mergePatch(map[string]any{
		"metadata": map[string]any{"uid": pvc.UID}, "spec": map[string]any{"volumeName": pvName},
	}), metav1.PatchOptions{}); err != nil {
		return client.IgnoreNotFound(err)
	}
	if _, err := pvcs.Patch(ctx, pvc.Name, types.MergePatchType, mergePatch(map[string]any{
		"metadata": map[string]any{"uid": pvc.UID},
		"status":   map[string]any{"phase": corev1.ClaimBound, "accessModes": pv.Spec.AccessModes, "capacity": pv.Spec.Capacity},
	}), metav1.PatchOptions{}, "status"); err != nil {
		return client.IgnoreNotFound(err)
	}
	ib.bound.Add(1)
	return nil
}

// mergePatch is the JSON of a merge patch (of strings, lists and quantities: it marshals).
func mergePatch(patch map[string]any) []byte {
	p, _ := json.Marshal(patch)
	return p
}

// Stop ends the binder and deletes the volumes it made that are still there; it says what it
// did.
func (ib *instantBinder) Stop(ctx context.Context) string {
	ib.stop()
	ib.wg.Wait()
	left := 0
	if list, err := ib.cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{}); err == nil {
		for _, pv := range list.Items {
			if pv.Spec.StorageClassName == instantClass {
				left++
				_ = ib.cs.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
			}
		}
	}
	return fmt.Sprintf("the benchmark's binder bound %d PVCs, deleted %d volumes of deleted PVCs (%d writes failed, left to the PersistentVolume controller; %d volumes were left and deleted)",
		ib.bound.Load(), ib.deleted.Load(), ib.errs.Load(), left)
}
