module edge-operator/test/node/pause

go 1.25.0
