// Placeholder so the V1AdapterTests target declared in Package.swift has a source folder (SwiftPM refuses
// a target without one). Delete once the V1Adapter tests land.
