package testbed

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// EditInEtcd changes an object stored as JSON (a custom resource: a JobSet, a PodGroup) straight
// in the testbed's etcd, behind the apiserver's back: no admission webhook, no validation, as a
// bug or an operator with etcd access could. key is its etcd key without the /registry prefix,
// as "jobset.x-k8s.io/jobsets/NAMESPACE/NAME". The apiserver's watch sees the change, so
// controllers get it as an ordinary update.
func EditInEtcd(ctx context.Context, c Config, key string, edit func(obj map[string]any) error) error {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{fmt.Sprintf("http://127.0.0.1:%d", c.Ports().Etcd)},
		DialTimeout: 5 * time.Second,
	})
	if err != nil {
		return err
	}
	defer cli.Close()
	key = "/registry/" + key
	// Controllers write the object meanwhile (JobSet its status): retry on a changed revision.
	for try := 0; ; try++ {
		done, err := editOnce(ctx, cli, key, edit)
		if done || err != nil || try == 20 {
			if !done && err == nil {
				err = fmt.Errorf("%s kept changing while it was edited", key)
			}
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// editOnce edits key if nobody changed it meanwhile, and says whether it did.
func editOnce(ctx context.Context, cli *clientv3.Client, key string, edit func(obj map[string]any) error) (bool, error) {
	resp, err := cli.Get(ctx, key)
	if err != nil {
		return false, err
	}
	if len(resp.Kvs) != 1 {
		return false, fmt.Errorf("etcd has no %s", key)
	}
	kv := resp.Kvs[0]
	var obj map[string]any
	if err := json.Unmarshal(kv.Value, &obj); err != nil {
		return false, fmt.Errorf("%s is not stored as JSON: %w", key, err)
	}
	if err := edit(obj); err != nil {
		return false, err
	}
	value, err := json.Marshal(obj)
	if err != nil {
		return false, err
	}
	txn, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)).
		Then(clientv3.OpPut(key, string(value))).Commit()
	if err != nil {
		return false, err
	}
	return txn.Succeeded, nil
}
