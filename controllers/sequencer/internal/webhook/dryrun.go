package webhook

import "time"

// DryRunRemember is how long the JobSet webhook takes a barrier pod template the API server
// accepted in a dry run for accepted, in its namespace: JobSets made from one template in a
// burst are checked once.
const DryRunRemember = 10 * time.Second
