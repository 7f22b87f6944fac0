# frozen_string_literal: true

# Loaded only by `rake gc_stress`: examples tagged :gc_stress run with
# GC.stress on, so that a Ruby value held by native code without being marked
# shows up as a crash or a corrupted value.
RSpec.configure do |config|
  config.around(:each, :gc_stress) do |example|
    GC.stress = true
    example.run
  ensure
    GC.stress = false
  end
end
