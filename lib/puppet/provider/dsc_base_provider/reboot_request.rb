# frozen_string_literal: true

require 'puppet'
require 'puppet/transaction'

module Puppet
  class Provider
    class DscBaseProvider
      # docs/behavior.md §3 "reboots": a DSC Set that asks for a reboot
      # refreshes the catalog's `reboot { 'dsc_reboot': }` (the reboot
      # module's type), and nothing else does. The refresh is an event
      # queued by the transaction's event manager to that one resource, as
      # a `notify` edge would queue it, but only for this Set: a DSC
      # resource that changes without asking refreshes nothing, whatever
      # its relationships. The reboot type then reboots (`when =>
      # refreshed`, its default) once per run, at the end of the run with
      # `apply => finished`; in noop (`noop => true` on the reboot) Puppet
      # reports "Would have triggered 'refresh'" instead.
      module RebootRequest
        # The reboot resource pwshlib refreshes: the title the legacy
        # puppetlabs-dsc module documented.
        TITLE = 'dsc_reboot'
        # The name of the event queued to it; its message names the DSC
        # resource whose Set asked.
        EVENT_NAME = :dsc_reboot_requested
        UNHANDLED = 'A reboot is required to complete the DSC Set of this resource; ' \
                    "Puppet does not reboot the node (declare reboot { 'dsc_reboot': apply => finished } " \
                    'to let it reboot when a DSC resource asks)'
        # Two thread-locals, not one pair: an Array per applied resource
        # would be an allocation for every resource of every catalog.
        TRANSACTION_KEY = :pwshlib_applying_transaction
        SOURCE_KEY = :pwshlib_applying_resource

        # Prepended to Puppet::Transaction: the transaction and the resource
        # it is applying on this thread, while it applies it. A Resource API
        # provider is handed neither (its `set` gets a context and a title),
        # and the refresh needs both: the catalog that holds the reboot
        # resource, the event manager that queues to it, and the source the
        # event names. `apply` (Puppet 7 and 8, OpenVox 9) evaluates one
        # resource and queues its events; eval_generated children pass their
        # parent as `ancestor`, which the events then come from.
        module TransactionApplying
          private

          def apply(resource, ancestor = nil)
            thread = Thread.current
            outer_transaction = thread[TRANSACTION_KEY]
            outer_source = thread[SOURCE_KEY]
            thread[TRANSACTION_KEY] = self
            thread[SOURCE_KEY] = ancestor || resource
            super
            RebootRequest.preview(self, ancestor || resource) if resource.noop?
          ensure
            thread[TRANSACTION_KEY] = outer_transaction
            thread[SOURCE_KEY] = outer_source
          end
        end

        module_function

        # Where a transaction exists (puppet apply, agent runs); `puppet
        # resource` and tests without one find nothing to refresh.
        def install
          return if Puppet::Transaction.ancestors.include?(TransactionApplying)
          return unless Puppet::Transaction.private_method_defined?(:apply)

          Puppet::Transaction.prepend(TransactionApplying)
        end

        # The DSC resource `name` (the Resource API's title or name hash)
        # asked for a reboot in its Set: refresh the catalog's reboot
        # resource, or warn naming the resource when there is none.
        def request(context, name)
          transaction = Thread.current[TRANSACTION_KEY]
          source = Thread.current[SOURCE_KEY]
          reboot = transaction&.catalog&.resource(:reboot, TITLE)
          return context.warning(title_of(name), UNHANDLED) unless reboot

          refresh(transaction, source, reboot)
        end

        # In noop no Set runs, so none can ask: a DSC resource that would be
        # changed is reported as one whose Set may ask, with a noop event to
        # the reboot resource (Puppet then says it "would have triggered
        # 'refresh'"); nothing reboots.
        def preview(transaction, source)
          return unless dsc_resource?(source)

          reboot = transaction.catalog&.resource(:reboot, TITLE)
          status = transaction.report&.resource_statuses&.[](source.ref)
          return unless reboot && status&.events&.any? { |event| event.status == 'noop' }

          source.notice("Would be changed: if its DSC Set asks for a reboot, #{reboot.ref} would restart the node (noop)")
          queue(transaction, source, reboot,
                source.event(name: EVENT_NAME, status: 'noop',
                             message: "The DSC Set of #{source.ref} may ask for a reboot"))
        rescue StandardError => e
          # A preview must not end the run it reports on.
          source.warning("Could not preview a reboot: #{e.message}")
        end

        # Queues the refresh to `reboot` alone.
        def refresh(transaction, source, reboot)
          source.notice("The DSC Set asked for a reboot: #{reboot.ref} #{outcome(reboot)}")
          queue(transaction, source, reboot,
                source.event(name: EVENT_NAME, status: 'success',
                             message: "The DSC Set of #{source.ref} asked for a reboot"))
        end

        # A reboot resource the transaction has already evaluated (declared
        # before the DSC resources, with nothing ordering it after them) is
        # refreshed at once, as Puppet would have done at its turn; one not
        # yet evaluated is refreshed at its turn, once, however many Sets
        # asked.
        def queue(transaction, source, reboot, event)
          manager = transaction.event_manager
          if evaluated?(transaction, reboot)
            manager.dequeue_all_events_for_resource(reboot)
            manager.queue_events_for_resource(source, reboot, :refresh, [event])
            manager.process_events(reboot)
          else
            manager.queue_events_for_resource(source, reboot, :refresh, [event])
          end
        end

        # A resource whose provider is a DSC provider (a Resource API type's).
        def dsc_resource?(resource)
          resource.class.respond_to?(:my_provider) && resource.class.my_provider.is_a?(DscBaseProvider)
        rescue StandardError
          false
        end

        # What the refresh does, as the reboot type does it.
        def outcome(reboot)
          return 'would restart the node (noop)' if reboot.noop?
          return 'will restart the node after this run' if reboot[:apply].to_s == 'finished'

          'will restart the node now, ending this run'
        end

        def evaluated?(transaction, resource)
          status = transaction.report&.resource_statuses&.[](resource.ref)
          !status.nil? && !status.evaluation_time.nil?
        end

        def title_of(name)
          return name unless name.is_a?(Hash)

          name[:name] || name['name'] || name[:title] || name.values.first
        end
      end
    end
  end
end

Puppet::Provider::DscBaseProvider::RebootRequest.install
