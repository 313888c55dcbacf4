// Pins Argo CD for the gitops suite. test/gitops/build.sh downloads the module at this version
// (checked against go.sum) and builds its one binary (./cmd) inside the copy, so its own
// replaces apply. v3.2 is the newest line that builds from the module proxy with Go 1.26:
// v3.3 to v3.5 replace a nested ./gitops-engine module whose release commit is not on the
// proxy, v3.6 needs Go 1.27, and v3.2.12 does not compile (controller/cache calls
// settings.ValidateExternalURL, which that tag lacks).
module edge-operator/test/gitops/argocd

go 1.26

require github.com/argoproj/argo-cd/v3 v3.2.11
